"""Model profiles and the TOML config that names them.

A config file (``LOOM_CONFIG``, else ``<user config dir>/loom/config.toml``) looks like::

    [defaults]
    subject = "base"
    summary = "haiku"
    collaborator = "sonnet"

    [profiles.base]
    provider = "openai-compatible"
    base_url = "http://127.0.0.1:8080/v1"
    model = "llama-3.1-8b"
    supports_n = false

    [profiles.haiku]
    provider = "anthropic"
    model = "claude-haiku-4-5"

    [presets.wild]
    temperature = 1.3
    top_k = 100
    xtc_probability = 0.5

Which profile serves a purpose: an explicit name, else ``LOOM_<PURPOSE>_PROFILE``, else
(subject only) ``LOOM_BASE_URL`` + ``LOOM_MODEL`` as an openai-compatible profile, else
``[defaults]``, else the built-in default (hosted when its key is set, else the bundled
local model). Keys never live here: a profile names the env var, the keyring holds the
rest (see :mod:`loom.llm.keys`). Other top-level tables are left to other layers.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from loom.llm.base import ModelError, ProviderName
from loom.llm.keys import resolve_key
from loom.model.sampling import API_NAMES, Sampling

Purpose = Literal["subject", "summary", "collaborator"]

DEFAULT_KEY_ENV: dict[str, str] = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "openai-compatible": "LOOM_API_KEY",
}
LOCAL_MODEL = "SmolLM2-135M-Instruct"


class ModelProfile(BaseModel):
    """How to reach one model and the defaults for calling it. Holds no secret."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    provider: ProviderName
    model: str  # for "local": a .gguf path, or any name for the bundled SmolLM2
    base_url: str | None = None
    api_key_env: str | None = None  # default per provider, see DEFAULT_KEY_ENV
    temperature: float = Field(0.9, ge=0)
    max_tokens: int = Field(50, ge=1)
    stop: list[str] | None = None
    # Hosted: the longest wait to connect or for the next streamed piece (the SDKs'
    # per-read timeout). Local: the whole generation.
    timeout_s: float = Field(60, gt=0)
    max_attempts: int = Field(3, ge=1)  # per request, transport failures only
    supports_n: bool = True  # false: n continuations as n parallel requests
    # Alternatives per token asked for with each continuation, where the provider offers
    # them (Loom stores them and shows them in the editor); false: none.
    logprobs: int | None = Field(5, ge=0, le=20)
    # How a text is continued: "completion" (a completion endpoint: a base model),
    # "prefill" (a chat model's reply begun with the text itself, where the API allows it)
    # or "instruct" (a chat model told to continue the text); unset: the provider's way.
    strategy: Literal["completion", "prefill", "instruct"] | None = None
    # How → fill writes the middle of a text (llm/fill.py): "infill" (a fill-in-the-middle
    # endpoint: llama.cpp's /infill), "suffix" (the completions endpoint's suffix),
    # "instruct" (a chat model told what comes before and after) or "prefix" (a base
    # model continuing the text before the span); unset: by provider and strategy.
    fill: Literal["infill", "suffix", "instruct", "prefix"] | None = None
    backoff_base_s: float = Field(2.0, ge=0)  # jittered exponential backoff…
    backoff_max_s: float = Field(60.0, ge=0)  # …capped here
    # Whether the model is sent the images a collaborator's tools return (MCP): unset,
    # Anthropic's and OpenAI's current chat models are; other endpoints get a line of text.
    images: bool | None = None

    @field_validator("logprobs", mode="before")
    @classmethod
    def _logprobs_switch(cls, value: object) -> object:
        # TOML has no null: `logprobs = false` turns them off, `true` is the default k.
        if value is False:
            return None
        return 5 if value is True else value

    @property
    def sees_images(self) -> bool:
        """Whether images go to this model as images (``images``, else by provider)."""
        if self.images is not None:
            return self.images
        if self.provider == "anthropic":
            return True
        return self.provider == "openai" and self.model.startswith(
            ("gpt-4o", "gpt-4.1", "gpt-5", "o1", "o3", "o4"))

    @property
    def continue_with(self) -> str:
        """The strategy in effect: the profile's, else Anthropic's prefill (its API has no
        completion endpoint), else the completion endpoint."""
        if self.strategy is not None:
            return self.strategy
        return "prefill" if self.provider == "anthropic" else "completion"

    @property
    def fill_with(self) -> str:
        """How ``→ fill`` asks this model: the profile's ``fill``, else ``instruct`` for
        chat models, Anthropic and the bundled SmolLM2-Instruct, ``suffix`` for OpenAI's
        completion models, ``infill`` for other local models and compatible servers (each
        falling back where refused: llm/fill.py)."""
        if self.fill is not None:
            return self.fill
        if self.provider == "anthropic" or self.continue_with != "completion":
            return "instruct"
        if self.provider == "local" and self.model == LOCAL_MODEL:
            return "instruct"  # the bundled SmolLM2-Instruct has no FIM tokens
        return "suffix" if self.provider == "openai" else "infill"

    @model_validator(mode="after")
    def _strategy_offered(self) -> ModelProfile:
        if self.strategy == "completion" and self.provider == "anthropic":
            raise ValueError("strategy: Anthropic's API has no completion endpoint "
                             "(use prefill or instruct)")
        if self.fill not in (None, "instruct") and self.provider == "anthropic":
            raise ValueError("fill: Anthropic's API has no completion endpoint (use "
                             "instruct)")
        if self.strategy == "prefill" and self.provider == "openai":
            raise ValueError("strategy: OpenAI's chat API takes no prefill (use instruct, "
                             "or completion for its base models)")
        return self

    @model_validator(mode="after")
    def _default_key_env(self) -> ModelProfile:
        if self.api_key_env is None and self.provider in DEFAULT_KEY_ENV:
            object.__setattr__(self, "api_key_env", DEFAULT_KEY_ENV[self.provider])
        return self

    def api_key(self, env: Mapping[str, str] | None = None) -> SecretStr | None:
        """The key for this profile, looked up now (env var, then keyring)."""
        if self.provider == "local":
            return None
        return resolve_key(self.api_key_env, self.provider, env)


class Defaults(BaseModel):
    model_config = ConfigDict(extra="ignore")
    subject: str | None = None
    summary: str | None = None
    collaborator: str | None = None


class Preset(Sampling):
    """A named set of sampling options (``[presets.NAME]``): ``→ continue preset:NAME``
    asks with them, and options given beside it win. Its keys are the options' names."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: What the pickers show beside its name (else its values).
    description: str | None = None

    @field_validator("stop", "banned", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    @model_validator(mode="before")
    @classmethod
    def _api_names(cls, data: object) -> object:
        # max_tokens and dry_multiplier, as the APIs and stored generations name them
        if isinstance(data, dict):
            ours = {api: name for name, api in API_NAMES.items()}
            data = {ours.get(k, k): v for k, v in data.items()}
        return data

    def sampling(self) -> Sampling:
        return Sampling(**self.chosen())

    def summary(self) -> str:
        """``temperature 1.3 · top_k 100``, or its description."""
        if self.description:
            return self.description
        shown = [f"{k} {_shown(v)}" for k, v in self.chosen().items()
                 if k not in ("grammar", "extra")]
        shown += [k for k in ("grammar", "extra") if getattr(self, k) is not None]
        return " · ".join(shown) or "(no options)"


def _shown(value: object) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list):
        return ", ".join(json.dumps(v, ensure_ascii=False) for v in value)
    return str(value)


class LoomConfig(BaseModel):
    profiles: dict[str, ModelProfile] = Field(default_factory=dict)
    defaults: Defaults = Field(default_factory=Defaults)
    #: The sampler presets by name (``[presets.wild]``).
    presets: dict[str, Preset] = Field(default_factory=dict)
    path: Path | None = None


def default_config_path(env: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if env is None else env
    if environ.get("LOOM_CONFIG"):
        return Path(environ["LOOM_CONFIG"]).expanduser()
    from platformdirs import user_config_dir

    return Path(user_config_dir("loom")) / "config.toml"


def load_config(path: Path | str | None = None, env: Mapping[str, str] | None = None) -> LoomConfig:
    """Read the config file; a missing file is an empty config, a broken one an error."""
    file = Path(path).expanduser() if path is not None else default_config_path(env)
    if not file.is_file():
        return LoomConfig(path=file)
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
        raise ModelError("config", f"cannot read {file}: {exc}", f"fix the file at {file}") from exc
    profiles: dict[str, ModelProfile] = {}
    tables = data.get("profiles", {})
    if not isinstance(tables, dict):
        raise ModelError("config", f"{file}: [profiles] must be a table", f"fix {file}")
    for name, table in tables.items():
        if not isinstance(table, dict):
            raise ModelError("config", f"{file}: profiles.{name} must be a table", f"fix {file}")
        try:
            profiles[name] = ModelProfile(**{"name": name, **table})
        except ValidationError as exc:
            raise ModelError(
                "config",
                f"{file}: profile {name!r} is invalid: {_first_error(exc)}",
                f"fix [profiles.{name}] in {file}",
            ) from exc
    try:
        defaults = Defaults(**data.get("defaults", {}))
    except (ValidationError, TypeError) as exc:
        raise ModelError("config", f"{file}: [defaults] is invalid", f"fix {file}") from exc
    return LoomConfig(profiles=profiles, defaults=defaults, presets=_presets(data, file),
                      path=file)


def _presets(data: dict, file: Path) -> dict[str, Preset]:
    tables = data.get("presets", {})
    if not isinstance(tables, dict):
        raise ModelError("config", f"{file}: [presets] must be a table", f"fix {file}")
    presets: dict[str, Preset] = {}
    for name, table in tables.items():
        if not isinstance(table, dict):
            raise ModelError("config", f"{file}: presets.{name} must be a table",
                             f"fix {file}")
        try:
            presets[name] = Preset(**table)
        except ValidationError as exc:
            raise ModelError(
                "config", f"{file}: preset {name!r} is invalid: {_first_error(exc)}",
                f"fix [presets.{name}] in {file} (its keys are → continue's options: "
                "temperature, top_k, min_p, …)") from exc
    return presets


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ()))
    return f"{where}: {err.get('msg')}" if where else str(err.get("msg"))


BUILTIN_PROFILES: dict[str, ModelProfile] = {
    p.name: p
    for p in (
        ModelProfile(name="local", provider="local", model=LOCAL_MODEL),
        # Models the providers serve today (claude-3-5-haiku and gpt-4o-mini were retired:
        # a retired id is a MODEL_ERROR that names the profile to change).
        ModelProfile(name="claude-haiku", provider="anthropic", model="claude-haiku-4-5"),
        ModelProfile(name="gpt-mini", provider="openai", model="gpt-4.1-mini"),
        # The hosted base model on the legacy completions endpoint (true continuations).
        ModelProfile(name="davinci-002", provider="openai", model="davinci-002"),
    )
}


#: How to give the collaborator (and the exploration's judge) a capable model: a key for a
#: built-in hosted profile, or a profile of one's own named in config.toml.
AGENT_MODEL_HINT = (
    "set ANTHROPIC_API_KEY or OPENAI_API_KEY (Claude Haiku or GPT-4.1 mini then "
    "collaborates), or add a profile to config.toml: a [profiles.claude] table with "
    "provider = \"anthropic\" and model = \"claude-haiku-4-5\", and collaborator = "
    "\"claude\" under [defaults] (docs/agent.md)")


def agent_model_caveat(profile: ModelProfile) -> tuple[str, str] | None:
    """``(message, hint)`` when ``profile``, serving the collaborator or the judge, is the
    bundled SmolLM2-135M: it runs, but its turns and scores are mostly noise, so every
    front end says so where agent work starts (else: nonsense with every check green).
    None for any other model (a local .gguf of one's own included)."""
    if profile.provider != "local" or profile.model.endswith(".gguf"):
        return None
    return (f"the collaborator's model is the bundled {LOCAL_MODEL}, far too small for "
            "agent work: expect rambling turns, few commands and scores that mean little",
            AGENT_MODEL_HINT)


def _has_key(profile: ModelProfile, env: Mapping[str, str] | None) -> bool:
    return profile.api_key(env) is not None


def builtin_default(purpose: Purpose, env: Mapping[str, str] | None = None) -> ModelProfile:
    """The built-in choice: a hosted model whose key is set, else the local model."""
    order = {
        "subject": ("davinci-002", "claude-haiku"),
        "summary": ("claude-haiku", "gpt-mini"),
        "collaborator": ("claude-haiku", "gpt-mini"),
    }[purpose]
    chosen = BUILTIN_PROFILES["local"]
    for name in order:
        if _has_key(BUILTIN_PROFILES[name], env):
            chosen = BUILTIN_PROFILES[name]
            break
    if purpose == "collaborator":
        chosen = chosen.model_copy(update={"max_tokens": 1024})
    return chosen


def resolve_profile(
    purpose: Purpose,
    name: str | None = None,
    config: LoomConfig | None = None,
    *,
    env: Mapping[str, str] | None = None,
) -> ModelProfile:
    """The profile that serves ``purpose`` (see the module docstring for the order)."""
    environ = os.environ if env is None else env
    if config is None:
        config = load_config(env=environ)
    name = name or environ.get(f"LOOM_{purpose.upper()}_PROFILE") or None
    if name:
        return _named(name, config)
    if purpose == "subject" and environ.get("LOOM_BASE_URL") and environ.get("LOOM_MODEL"):
        return ModelProfile(
            name="env",
            provider="openai-compatible",
            base_url=environ["LOOM_BASE_URL"],
            model=environ["LOOM_MODEL"],
        )
    configured = getattr(config.defaults, purpose)
    if configured:
        return _named(configured, config)
    return builtin_default(purpose, environ)


#: Built-in profiles renamed with their model, under the name they had.
_RENAMED = {"gpt-4o-mini": "gpt-mini"}


def _named(name: str, config: LoomConfig) -> ModelProfile:
    profile = config.profiles.get(name) or BUILTIN_PROFILES.get(_RENAMED.get(name, name))
    if profile is not None:
        return profile
    known = ", ".join(sorted({*config.profiles, *BUILTIN_PROFILES}))
    where = config.path or "the config file"
    raise ModelError(
        "config",
        f"no model profile named {name!r} (known: {known})",
        f"define [profiles.{name}] in {where}",
    )
