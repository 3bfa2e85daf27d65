import keyring
import keyring.errors
import pytest

from loom.llm import keys
from loom.llm.base import ModelError
from loom.llm.config import (
    BUILTIN_PROFILES,
    LoomConfig,
    ModelProfile,
    builtin_default,
    default_config_path,
    load_config,
    resolve_profile,
)
from loom.redact import forget_secrets, redact

NO_KEYS = {"LOOM_NO_KEYRING": "1"}


@pytest.fixture(autouse=True)
def _isolated(monkeypatch):
    keys.clear_cache()
    forget_secrets()
    for var in (
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "LOOM_API_KEY",
        "LOOM_CONFIG",
        "LOOM_BASE_URL",
        "LOOM_MODEL",
        "LOOM_SUBJECT_PROFILE",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LOOM_NO_KEYRING", "1")
    yield
    keys.clear_cache()
    forget_secrets()


CONFIG = """
[defaults]
subject = "base"
summary = "haiku"

[profiles.base]
provider = "openai-compatible"
base_url = "http://127.0.0.1:8080/v1"
model = "llama-3.1-8b"
supports_n = false
max_tokens = 80

[profiles.haiku]
provider = "anthropic"
model = "claude-3-5-haiku-latest"

[lsp]
something = "for another layer"
"""


def write(tmp_path, text=CONFIG):
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_profile_defaults():
    p = ModelProfile(name="x", provider="openai", model="gpt")
    assert (p.temperature, p.max_tokens, p.timeout_s, p.max_attempts, p.supports_n) == (
        0.9,
        50,
        60,
        3,
        True,
    )
    assert p.stop is None and p.logprobs == 5 and p.base_url is None
    assert p.api_key_env == "OPENAI_API_KEY"
    assert ModelProfile(name="a", provider="anthropic", model="c").api_key_env == (
        "ANTHROPIC_API_KEY"
    )
    assert ModelProfile(name="c", provider="openai-compatible", model="c").api_key_env == (
        "LOOM_API_KEY"
    )
    assert ModelProfile(name="l", provider="local", model="m").api_key_env is None
    custom = ModelProfile(name="x", provider="openai", model="g", api_key_env="MY")
    assert custom.api_key_env == "MY"


def test_profile_rejects_unknown_fields_and_bad_values():
    with pytest.raises(ValueError):
        ModelProfile(name="x", provider="openai", model="g", api_key="sk-nope")
    with pytest.raises(ValueError):
        ModelProfile(name="x", provider="openai", model="g", max_tokens=0)
    with pytest.raises(ValueError):
        ModelProfile(name="x", provider="cohere", model="g")


def test_load_config(tmp_path):
    config = load_config(write(tmp_path))
    assert set(config.profiles) == {"base", "haiku"}
    base = config.profiles["base"]
    assert (base.name, base.provider, base.supports_n, base.max_tokens) == (
        "base",
        "openai-compatible",
        False,
        80,
    )
    assert config.defaults.subject == "base"
    assert config.defaults.collaborator is None


def test_missing_config_is_empty(tmp_path):
    config = load_config(tmp_path / "nope.toml")
    assert config.profiles == {} and config.path == tmp_path / "nope.toml"


def test_config_path_from_env(tmp_path):
    path = write(tmp_path)
    assert default_config_path({"LOOM_CONFIG": str(path)}) == path
    assert "base" in load_config(env={"LOOM_CONFIG": str(path)}).profiles
    assert default_config_path({}).name == "config.toml"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[profiles.x\nprovider=", "cannot read"),
        ('[profiles.x]\nprovider = "openai"\nmodel = "m"\ntemperature = "hot"\n', "'x'"),
        ('[profiles.x]\nprovider = "openai"\nmodel = "m"\napi_key = "sk-x"\n', "api_key"),
        ("profiles = 3\n", "must be a table"),
    ],
)
def test_broken_config_is_a_config_error(tmp_path, text, needle):
    with pytest.raises(ModelError) as info:
        load_config(write(tmp_path, text))
    assert info.value.kind == "config"
    assert needle in info.value.message
    assert str(tmp_path) in info.value.hint


def test_resolve_order(tmp_path):
    config = load_config(write(tmp_path))
    assert resolve_profile("subject", config=config, env=NO_KEYS).name == "base"
    assert resolve_profile("summary", config=config, env=NO_KEYS).name == "haiku"
    # Explicit name beats everything; built-in names work too.
    assert resolve_profile("subject", "haiku", config=config, env=NO_KEYS).name == "haiku"
    assert resolve_profile("subject", "local", config=config, env=NO_KEYS).provider == "local"
    # LOOM_<PURPOSE>_PROFILE beats [defaults].
    env = {**NO_KEYS, "LOOM_SUBJECT_PROFILE": "haiku"}
    assert resolve_profile("subject", config=config, env=env).name == "haiku"
    # LOOM_BASE_URL + LOOM_MODEL make an openai-compatible subject.
    env = {**NO_KEYS, "LOOM_BASE_URL": "http://h:1/v1", "LOOM_MODEL": "m7"}
    p = resolve_profile("subject", config=config, env=env)
    assert (p.provider, p.base_url, p.model, p.api_key_env) == (
        "openai-compatible",
        "http://h:1/v1",
        "m7",
        "LOOM_API_KEY",
    )
    assert resolve_profile("summary", config=config, env=env).name == "haiku"


def test_unknown_profile_name(tmp_path):
    config = load_config(write(tmp_path))
    with pytest.raises(ModelError) as info:
        resolve_profile("subject", "nope", config=config, env=NO_KEYS)
    assert info.value.kind == "config"
    assert "base" in info.value.message and "[profiles.nope]" in info.value.hint


@pytest.mark.parametrize(
    ("env", "subject", "summary"),
    [
        ({}, "local", "local"),
        ({"ANTHROPIC_API_KEY": "sk-ant-x"}, "claude-haiku", "claude-haiku"),
        ({"OPENAI_API_KEY": "sk-x"}, "davinci-002", "gpt-mini"),
        (
            {"OPENAI_API_KEY": "sk-x", "ANTHROPIC_API_KEY": "sk-ant-x"},
            "davinci-002",
            "claude-haiku",
        ),
    ],
)
def test_builtin_defaults(env, subject, summary):
    env = {**NO_KEYS, **env}
    assert resolve_profile("subject", config=LoomConfig(), env=env).name == subject
    assert resolve_profile("summary", config=LoomConfig(), env=env).name == summary
    collab = resolve_profile("collaborator", config=LoomConfig(), env=env)
    assert collab.name == summary and collab.max_tokens == 1024
    assert BUILTIN_PROFILES[summary].max_tokens == 50


def test_builtin_models():
    assert BUILTIN_PROFILES["claude-haiku"].model == "claude-haiku-4-5"
    assert BUILTIN_PROFILES["gpt-mini"].model == "gpt-4.1-mini"
    # the name a retired built-in had still finds its successor
    assert resolve_profile("summary", "gpt-4o-mini", LoomConfig()).model == "gpt-4.1-mini"
    assert builtin_default("summary", NO_KEYS).provider == "local"


def test_key_from_env_is_secret_and_registered():
    p = ModelProfile(name="x", provider="openai", model="g", api_key_env="MY_KEY")
    key = p.api_key({"MY_KEY": "opaque-key-value-123"})
    assert key.get_secret_value() == "opaque-key-value-123"
    assert "opaque-key-value-123" not in repr(key)
    assert "opaque-key-value-123" not in p.model_dump_json()
    assert redact("x opaque-key-value-123 y") == "x [REDACTED] y"


def test_key_from_keyring(monkeypatch):
    calls = []

    def get_password(service, user):
        calls.append((service, user))
        return "keyring-key-value-123"

    monkeypatch.setattr(keyring, "get_password", get_password)
    p = ModelProfile(name="x", provider="anthropic", model="c")
    key = p.api_key({})
    assert key.get_secret_value() == "keyring-key-value-123"
    assert calls == [("loom", "anthropic")]
    # The env var wins over the keyring.
    assert p.api_key({"ANTHROPIC_API_KEY": "env-key-value-1"}).get_secret_value() == (
        "env-key-value-1"
    )


@pytest.mark.parametrize(
    "error", [keyring.errors.NoKeyringError("no backend"), RuntimeError("dbus exploded")]
)
def test_keyring_failure_means_no_key(monkeypatch, error):
    def get_password(service, user):
        raise error

    monkeypatch.setattr(keyring, "get_password", get_password)
    p = ModelProfile(name="x", provider="openai", model="g")
    assert p.api_key({}) is None
    assert builtin_default("summary", {}).provider == "local"


def test_keyring_skipped_when_disabled(monkeypatch):
    def get_password(service, user):
        raise AssertionError("keyring must not be asked")

    monkeypatch.setattr(keyring, "get_password", get_password)
    assert ModelProfile(name="x", provider="openai", model="g").api_key(NO_KEYS) is None


def test_local_profiles_have_no_key():
    assert BUILTIN_PROFILES["local"].api_key({}) is None


def test_keyring_misses_are_cached_briefly(monkeypatch):
    calls = []

    def get_password(service, user):
        calls.append(user)

    monkeypatch.setattr(keyring, "get_password", get_password)
    p = ModelProfile(name="x", provider="openai", model="g")
    assert p.api_key({}) is None and p.api_key({}) is None
    assert calls == ["openai"]
    monkeypatch.setattr(keys, "NEGATIVE_TTL_S", 0.0)
    keys.clear_cache()
    p.api_key({})
    p.api_key({})
    assert calls == ["openai", "openai", "openai"]


def test_presets_read_as_continue_s_options(tmp_path):
    """``[presets.NAME]``: its keys are → continue's options (the APIs' names for tokens
    and DRY read too), one stop or banned string may stand alone, and extra is a table."""
    path = tmp_path / "config.toml"
    path.write_text('[presets.wild]\ntemperature = 1.3\ntop_k = 100\nstop = "\\n"\n'
                    'banned = ["very", "suddenly"]\nmax_tokens = 30\ndry_multiplier = 0.8\n'
                    "grammar = '''root ::= \"a\" | \"b\"'''\n"
                    'extra = { top_n_sigma = 1.5 }\n'
                    '\n[presets.calm]\ndescription = "low and steady"\ntemperature = 0.3\n',
                    encoding="utf-8")
    config = load_config(path)
    wild = config.presets["wild"]
    assert wild.sampling().chosen() == {
        "tokens": 30, "temperature": 1.3, "top_k": 100, "dry": 0.8, "banned": ["very",
        "suddenly"], "grammar": 'root ::= "a" | "b"', "stop": ["\n"],
        "extra": {"top_n_sigma": 1.5}}
    assert wild.summary() == ('tokens 30 · temperature 1.3 · top_k 100 · dry 0.8 · banned '
                              '"very", "suddenly" · stop "\\n" · grammar · extra')
    assert config.presets["calm"].summary() == "low and steady"
    assert list(config.presets) == ["wild", "calm"]


@pytest.mark.parametrize(("table", "needle"), [
    ("topk = 3", "preset 'bad' is invalid: topk: Extra inputs are not permitted"),
    ("temperature = \"hot\"", "preset 'bad' is invalid: temperature:"),
    ("extra = { n = 3 }", "extra: n is Loom's own to set"),
    ("extra = { temperature = 3 }", "extra: temperature is set by temperature:"),
])
def test_a_bad_preset_is_a_config_error_naming_it(tmp_path, table, needle):
    path = tmp_path / "config.toml"
    path.write_text(f"[presets.bad]\n{table}\n", encoding="utf-8")
    with pytest.raises(ModelError) as err:
        load_config(path)
    assert err.value.kind == "config" and needle in err.value.message, err.value.message
    assert err.value.hint.startswith(f"fix [presets.bad] in {path}")
