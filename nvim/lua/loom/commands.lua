-- :Loom and the buffer-local keymaps. Actions go through workspace/executeCommand.
local loom = require("loom")
local buffers = require("loom.buffers")

local C = {}
local api = vim.api

local function current_uri(buf)
  local uri = buffers.uri(buf or 0)
  if not uri then
    loom.notify("✗ not a loom buffer (open one with :Loom open)", vim.log.levels.ERROR)
  end
  return uri
end

--- Run a server command; `on_done(result)` after success.
function C.exec(command, args, opts)
  opts = opts or {}
  local buf = opts.buf or api.nvim_get_current_buf()
  local client, why = loom.client(true)
  if not client then
    loom.notify(loom.failure(why), vim.log.levels.ERROR)
    return
  end
  local start_tick = api.nvim_buf_is_valid(buf) and api.nvim_buf_get_changedtick(buf) or -1
  client:request("workspace/executeCommand", { command = command, arguments = { args } }, function(err, result)
    if err then
      loom.notify(loom.failure(err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    local ok = not (type(result) == "table" and result.ok == false)
    local text = type(result) == "table" and (result.text or result.message) or nil
    if text and text ~= "" and (opts.echo or not ok) then
      loom.notify(text, ok and vim.log.levels.INFO or vim.log.levels.ERROR)
    end
    if ok and opts.commits and api.nvim_buf_is_valid(buf) and buffers.is_loom_name(api.nvim_buf_get_name(buf)) then
      -- the server committed the buffer before acting: unless the user typed since the
      -- server's last edit, what it shows now is the tree
      local tick = api.nvim_buf_get_changedtick(buf)
      if tick == start_tick or tick == vim.b[buf].loom_server_tick then
        buffers.mark_clean(buf)
      end
    end
    if opts.on_done then
      opts.on_done(result, ok)
    end
  end, buf)
end

--- What a node command acts on: `{node = REF}` when the cursor is on a [ref], else
--- `{line, character}` of the cursor (the server finds the node whose text is there, or
--- the path's tip in the working text).
function C.node_at_cursor(buf)
  buf = buf or api.nvim_get_current_buf()
  local row, col = unpack(api.nvim_win_get_cursor(0))
  local line = api.nvim_buf_get_lines(buf, row - 1, row, false)[1] or ""
  local init = 1
  while true do
    local s, e, ref = line:find("%[([%w'%-]+)%]", init)
    if not s then
      break
    end
    if col + 1 >= s and col + 1 <= e then
      return { node = ref }
    end
    init = e + 1
  end
  local client = loom.client(false)
  local character = col
  if client then
    character = vim.lsp.util.make_position_params(0, client.offset_encoding).position.character
  end
  return { line = row - 1, character = character }
end

local function edit(uri)
  if uri then
    vim.cmd.edit(vim.fn.fnameescape(uri))
  end
end

local function select_tree(prompt, cb)
  loom.request("loom/trees", {}, function(trees, err)
    if err then
      loom.notify(loom.failure(err), vim.log.levels.ERROR)
      return
    end
    if not trees or #trees == 0 then
      loom.notify("no trees yet: :Loom new TITLE, :Loom import FILE, or loom demo")
      return
    end
    vim.ui.select(trees, {
      prompt = prompt,
      format_item = function(t)
        return ("%s  %s  (%s, %d nodes)"):format(t.id:sub(1, 10), t.title, t.mode or "?", t.nodes or 0)
      end,
    }, function(choice)
      if choice then
        cb(choice)
      end
    end)
  end)
end

C.subcommands = {}
local S = C.subcommands

S.open = function(args)
  if #args == 0 then
    select_tree("Loom tree", function(t)
      edit(t.pathUri or t.uri)
    end)
    return
  end
  -- "The House at the End of the Lane", "the house" (a unique start), an id, each with
  -- an optional node after it: the server sorts out which words are the title
  C.exec("loom.open", { tree = table.concat(args, " ") })
end

S.new = function(args, line)
  local title = line:match("^%s*new%s+(.-)%s*$")
  if not title or title == "" then
    loom.notify("usage: :Loom new TITLE", vim.log.levels.ERROR)
    return
  end
  local res, err = loom.request_sync("loom/newTree", { title = title })
  if not res then
    loom.notify(loom.failure(err), vim.log.levels.ERROR)
    return
  end
  edit(res.uri)
end

S.tree = function()
  local info = buffers.parse(buffers.uri(0))
  if info.tree then
    -- the server's URI for it (it ends with the tree's title)
    local trees = loom.request_sync("loom/trees", {}) or {}
    for _, t in ipairs(trees) do
      if t.id == info.tree then
        edit(t.uri)
        return
      end
    end
    edit("loom://tree/" .. info.tree)
    return
  end
  select_tree("Loom tree", function(t)
    edit(t.uri)
  end)
end

--- :Loom picture — the tree as a picture in a float (<CR> opens a node's path);
--- :Loom picture svg — as an SVG in the browser.
S.picture = function(args)
  local info = buffers.parse(buffers.uri(0))
  local function go(tree)
    local buf, _ = require("loom.picture").open(tree, buffers.uri(0))
    if buf and args[1] == "svg" then
      local res = loom.request_sync("loom/picture", { tree = tree })
      if res then
        require("loom.picture").browse(res)
      end
    end
  end
  if info.tree then
    go(info.tree)
  else
    select_tree("Picture of which tree", function(t)
      go(t.id)
    end)
  end
end

--- :Loom continue [N] [TOKENS] [OPTIONS] — commit, then generate: N continuations of at
--- most TOKENS tokens, and any of → continue's options as typed (temperature:0.3 n:2
--- models:a,b), which the server reads as it reads a typed → continue line (the same ✗
--- errors); the plugin knows no option's name.
S.continue = function(_args, line)
  local uri = current_uri()
  if not uri then
    return
  end
  local rest = (line or ""):match("^%s*%S+%s*(.-)%s*$") or ""
  local function number_first(s) -- a bare number first: N, then TOKENS (as before)
    local num, after = s:match("^(%d+)%s+(.*)$")
    if num then
      return num, after
    end
    num = s:match("^(%d+)$")
    return num, num and "" or s
  end
  local n, tokens
  n, rest = number_first(rest)
  if n then
    tokens, rest = number_first(rest)
  end
  local params = { uri = uri, n = tonumber(n) or loom.config.default_n, tokens = tonumber(tokens), options = rest }
  local function go(said)
    loom.notify(said and ("Loom: generating (%s)… (:Loom cancel to stop)"):format(said)
      or ("Loom: generating %d… (:Loom cancel to stop)"):format(params.n))
    -- the answer comes when it has finished: "✓ 3 continuations from [a7x2]"
    C.exec("loom.continue", params, { commits = true, echo = true })
  end
  if rest == "" then
    go(nil)
    return
  end
  -- what the options read as, first: a ✗ at once, and no "generating…" before it
  loom.request("loom/continueOptions", { options = rest }, function(result, err)
    if err then
      loom.notify(loom.failure(err), vim.log.levels.ERROR)
      return
    end
    go(type(result) == "table" and type(result.data) == "table" and result.data.reads_as or rest)
  end)
end

--- :Loom fill [N] — N model-written alternatives for the text last selected in visual
--- mode (within one node), the text around it kept: the first streams in place of the
--- span, then the path shows it as a version of the node (the others are in :Loom siblings).
S.fill = function(args)
  local uri = current_uri()
  if not uri then
    return
  end
  local buf = api.nvim_get_current_buf()
  local client = loom.client(true)
  if not client then
    return
  end
  local s, e = api.nvim_buf_get_mark(buf, "<"), api.nvim_buf_get_mark(buf, ">")
  if s[1] == 0 or e[1] == 0 then
    loom.notify("✗ select the words to fill first (visual mode), then :Loom fill", vim.log.levels.ERROR)
    return
  end
  local range = vim.lsp.util.make_given_range_params(s, e, buf, client.offset_encoding).range
  local n = tonumber(args[1]) or loom.config.default_n
  loom.notify(("Loom: filling %d… (:Loom cancel to stop)"):format(n))
  C.exec("loom.fill", {
    uri = uri, n = n, line = range.start.line, character = range.start.character,
    endLine = range["end"].line, endCharacter = range["end"].character,
  }, { commits = true, echo = true })
end

--- :Loom model [NAME|default|preset:NAME|preset:none] — the model :Loom continue and
--- → continue ask in this tree, or the sampler preset (config.toml's [presets.NAME]) they
--- sample with there: without a name, a picker of the models and the presets (the ones in
--- use marked).
S.model = function(args)
  local uri = current_uri()
  if not uri then
    return
  end
  local function choose(name)
    local preset = name:match("^preset:(.*)$")
    if preset then
      C.exec("loom.chooseModel", { uri = uri, preset = preset ~= "none" and preset or "" }, { echo = true })
      return
    end
    C.exec("loom.chooseModel", { uri = uri, profile = name ~= "default" and name or nil }, { echo = true })
  end
  if args[1] then
    choose(args[1])
    return
  end
  C.exec("loom.models", { uri = uri }, {
    on_done = function(result, ok)
      if not ok or type(result) ~= "table" or not result.data then
        return
      end
      local data = result.data
      local items = {}
      for _, m in ipairs(data.models or {}) do
        items[#items + 1] = { model = m }
      end
      for _, p in ipairs(data.presets or {}) do
        items[#items + 1] = { preset = p }
      end
      if data.preset and data.preset ~= vim.NIL then
        items[#items + 1] = { preset = { name = "none", description = "the model's own defaults" } }
      end
      local now = data.current or "?"
      if data.preset and data.preset ~= vim.NIL then
        now = now .. " with preset " .. data.preset
      end
      vim.schedule(function()
        vim.ui.select(items, {
          prompt = ("Model or sampler preset for this tree (now %s)"):format(now),
          format_item = function(item)
            local m, p = item.model, item.preset
            if p then
              return ("%spreset:%s  %s"):format(p.name == data.preset and "● " or "  ", p.name, p.description)
            end
            local marks = (m.name == data.current and "● " or "  ")
            local notes = (m.default and " (default)" or "") .. (m.ready and "" or " (no API key)")
            return ("%s%s  %s%s"):format(marks, m.name, m.description, notes)
          end,
        }, function(item)
          if item and item.preset then
            choose("preset:" .. item.preset.name)
          elseif item then
            choose(item.model.default and "default" or item.model.name)
          end
        end)
      end)
    end,
  })
end

--- :Loom suggest [N] [TOKENS] — N continuations of the path's end, shown as ghost text to
--- cycle (<M-]>/<M-[>) and accept (<M-l>, a word <M-Right>, a line <M-C-Right>).
S.suggest = function(args)
  local uri = current_uri()
  if not uri then
    return
  end
  local buf = api.nvim_get_current_buf()
  local n = tonumber(args[1]) or loom.config.default_n
  loom.notify("Loom: generating suggestions… (:Loom cancel stops it)")
  C.exec("loom.suggest", { uri = uri, n = n, tokens = tonumber(args[2]) }, {
    commits = true,
    on_done = function(result, ok)
      if ok then
        vim.schedule(function()
          -- (the "generating…" line would stay on the command line after it is done)
          local made = type(result) == "table" and type(result.data) == "table" and result.data.created or {}
          loom.notify(("✓ %d suggestion%s: <M-]> next · <M-l> accept · <M-Right> a word"):format(#made, #made == 1 and "" or "s"))
          require("loom.suggest").fetch(buf)
        end)
      end
    end,
  })
end

--- A toggle's word: true for "on", false for "off", nil (flip) for anything else.
local function on_off(word)
  if word == "on" then
    return true
  elseif word == "off" then
    return false
  end
  return nil
end

--- :Loom probabilities [on|off] — colour model text by token probability (toggle).
S.probabilities = function(args)
  local on = on_off(args[1])
  -- an empty Lua table is sent as a JSON array: the toggle's argument must be an object
  local arg = on == nil and vim.empty_dict() or { on = on }
  C.exec("loom.toggleProbabilities", arg, { echo = true, on_done = function(res, ok)
    if ok then
      -- the server's workspace/semanticTokens/refresh brings the colours; forcing a refresh
      -- here too raced its delta request (semantic_tokens.lua: "assertion failed!")
      vim.g.loom_probabilities = res.data and res.data.on
    end
  end })
end

--- :Loom score [on|off] — score the writer's words (toggle): the path's text no model has
--- scored yet is scored, the probability colours come on for it as for model text, and
--- its least likely spans are marked (diagnostics; their code action branches there with
--- the model's choice). Text committed while it is on is scored too.
S.score = function(args)
  local uri = current_uri()
  if not uri then
    return
  end
  local on = on_off(args[1])
  if on == true or (on == nil and not vim.g.loom_scores) then
    loom.notify("Loom: scoring the writer's words… (:Loom cancel stops it)")
  end
  C.exec("loom.toggleScores", { uri = uri, on = on }, { echo = true, commits = true, on_done = function(res, ok)
    if ok then
      vim.g.loom_scores = res.data and res.data.on
      vim.g.loom_probabilities = res.data and res.data.on or vim.g.loom_probabilities
    end
  end })
end

--- :Loom alternatives — what the model almost wrote at the cursor: branch from an
--- alternative token (and continue), or split the node there (the server's code actions).
S.alternatives = function()
  vim.lsp.buf.code_action({
    filter = function(action)
      return action.command and action.command.command == "loom.split"
    end,
  })
end

S.branch = function()
  local uri = current_uri()
  if not uri then
    return
  end
  C.exec("loom.branch", vim.tbl_extend("force", { uri = uri }, C.node_at_cursor()),
    { commits = true, echo = true })
end

--- After a switch, keep the cursor in the node switched to (`range`: the server's LSP range
--- of its text): the next ]n/[n then cycles that node again. Before, the cursor fell to the
--- end of the parent and the next ]n looked for the parent's siblings.
function C.keep_cursor_in(buf, range)
  if type(range) ~= "table" or not api.nvim_buf_is_valid(buf) or api.nvim_get_current_buf() ~= buf then
    return
  end
  local client = loom.client(false)
  local enc = client and client.offset_encoding or "utf-16"
  local function byte_pos(p)
    local line = api.nvim_buf_get_lines(buf, p.line, p.line + 1, false)[1] or ""
    local ok, col = pcall(vim.str_byteindex, line, enc, p.character, false)
    return { p.line + 1, ok and col or 0 }
  end
  local s, e = byte_pos(range.start), byte_pos(range["end"])
  local row, col = unpack(api.nvim_win_get_cursor(0))
  local inside = (row > s[1] or (row == s[1] and col >= s[2])) and (row < e[1] or (row == e[1] and col < e[2]))
  if not inside and s[1] <= api.nvim_buf_line_count(buf) then
    pcall(api.nvim_win_set_cursor, 0, s)
  end
end

local function cycle(delta)
  local uri = current_uri()
  if not uri then
    return
  end
  local buf = api.nvim_get_current_buf()
  C.exec("loom.cycleSibling", vim.tbl_extend("force", { uri = uri, delta = delta }, C.node_at_cursor()), {
    commits = true,
    echo = true,
    on_done = function(result, ok)
      if ok and type(result) == "table" and type(result.data) == "table" then
        vim.schedule(function()
          C.keep_cursor_in(buf, result.data.range)
        end)
      end
    end,
  })
end
S.next = function()
  cycle(1)
end
S.prev = function()
  cycle(-1)
end

--- :Loom siblings — every sibling of the node under the cursor, side by side, to pick one.
S.siblings = function()
  local uri = current_uri()
  if not uri then
    return
  end
  require("loom.siblings").open(vim.tbl_extend("force", { uri = uri }, C.node_at_cursor()), C.exec)
end

--- Two paths side by side in diff mode (two siblings' paths: where they part).
function C.compare(left, right)
  vim.cmd("tabnew " .. vim.fn.fnameescape(left))
  vim.cmd("diffthis")
  vim.cmd("rightbelow vsplit " .. vim.fn.fnameescape(right))
  vim.cmd("diffthis")
  for _, win in ipairs(api.nvim_tabpage_list_wins(0)) do
    vim.wo[win].wrap = true -- a paragraph is one line: wrap to see where they part
  end
end

--- :Loom diff [NODE] — the path through the node under the cursor beside the path
--- through NODE (default: its next sibling), in diff mode.
S.diff = function(args)
  local uri = current_uri()
  if not uri then
    return
  end
  local target = C.node_at_cursor()
  C.exec("loom.siblings", vim.tbl_extend("force", { uri = uri }, target), {
    on_done = function(result, ok)
      if not ok or type(result) ~= "table" or not result.data then
        return
      end
      local data = result.data
      local sibs = data.siblings or {}
      local function compare(current, other)
        if current and other and other.id ~= current.id then
          vim.schedule(function()
            C.compare(current.uri, other.uri)
          end)
        else
          loom.notify("✗ NOT_FOUND: no other sibling to compare with", vim.log.levels.ERROR)
        end
      end
      local current, other
      for i, s in ipairs(sibs) do
        if s.current then
          current = s
          -- the next one; past the page's end (a long family comes 100 at a time) asked for
          other = sibs[i + 1] or ((data.next == nil or data.next == vim.NIL) and sibs[1] or nil)
        end
      end
      if args[1] then
        for _, s in ipairs(sibs) do
          if s.localId:sub(1, #args[1]) == args[1] or s.label == args[1] then
            other = s
          end
        end
      end
      local k, total = data.currentIndex, data.total or #sibs
      if (not current or not other) and type(k) == "number" and total > 1 then
        -- the shown one, or its next, is beyond this page: ask for the two by place
        C.exec("loom.siblings", vim.tbl_extend("force", { uri = uri }, target,
          { offset = k - 1, limit = 2 }), {
          on_done = function(near, near_ok)
            if not near_ok or type(near) ~= "table" or not near.data then
              return
            end
            local two = near.data.siblings or {}
            compare(two[1], other or two[2] or sibs[1])
          end,
        })
        return
      end
      compare(current, other)
    end,
  })
end

-- ── the reader's actions: bookmarks, tags, ratings, pruning, deletion, search ──

--- Run a reader's action on the node under the cursor (or a tree): `loom.act`.
local function act(action, value, extra)
  local uri = current_uri()
  if not uri then
    return
  end
  local args = vim.tbl_extend("force", { uri = uri, action = action, value = value }, extra or C.node_at_cursor())
  C.exec("loom.act", args, { commits = true, echo = true })
end

--- Ask yes or no through vim.ui.select (Telescope/dressing users get their picker).
local function confirm(prompt, yes, cb)
  vim.ui.select({ yes, "Cancel" }, { prompt = prompt }, function(choice)
    if choice == yes then
      cb()
    end
  end)
end

--- :Loom messages — every message of the session in full (long ones showed in a corner).
S.messages = function()
  require("loom.toast").list()
end

S.bookmark = function(args, line)
  local label = line:match("^%s*bookmark%s+(.-)%s*$")
  act("bookmark", label ~= "" and label or nil)
end
S.unbookmark = function()
  act("unbookmark")
end
S.tag = function(args)
  if #args == 0 then
    vim.ui.input({ prompt = "Tags: " }, function(input)
      if input and input ~= "" then
        act("tag", input)
      end
    end)
    return
  end
  act("tag", table.concat(args, " "))
end
S.untag = function(args)
  act("untag", table.concat(args, " "))
end
S.rate = function(args)
  act("rate", args[1] or "1")
end
S.prune = function()
  act("prune")
end
S.unprune = function(args)
  if not args[1] then
    loom.notify("usage: :Loom unprune NODE (a pruned node is hidden: its id is in the search with pruned, or the trace)", vim.log.levels.ERROR)
    return
  end
  act("unprune", nil, { node = args[1] })
end
S.delete = function(args)
  local uri = current_uri()
  if not uri then
    return
  end
  if args[1] == "tree" then
    local info = buffers.parse(uri)
    confirm("Delete this whole tree? (:Loom undelete tree within 30 days)", "Delete the tree", function()
      C.exec("loom.act", { uri = uri, action = "deleteTree", tree = info.tree }, { echo = true })
    end)
    return
  end
  local target = args[1] and { node = args[1] } or C.node_at_cursor()
  confirm("Delete this node and everything below it? (:Loom undelete within 30 days)", "Delete", function()
    act("delete", nil, target)
  end)
end
S.undelete = function(args)
  local uri = current_uri()
  if not uri then
    return
  end
  if args[1] == "tree" then
    C.exec("loom.act", { uri = uri, action = "undeleteTree", tree = args[2] or buffers.parse(uri).tree }, { echo = true })
    return
  end
  if not args[1] then
    loom.notify("usage: :Loom undelete NODE | :Loom undelete tree [TREE]", vim.log.levels.ERROR)
    return
  end
  act("undelete", nil, { node = args[1] })
end
S.rename = function(args, line)
  local title = line:match("^%s*rename%s+(.-)%s*$")
  local uri = current_uri()
  if not uri or not title or title == "" then
    loom.notify("usage: :Loom rename NEW TITLE", vim.log.levels.ERROR)
    return
  end
  C.exec("loom.act", { uri = uri, action = "rename", value = title, tree = buffers.parse(uri).tree }, { echo = true })
end

--- Pick one of `items` ({label, uri}) and open its path.
local function pick_and_open(items, prompt)
  if #items == 0 then
    loom.notify("nothing found")
    return
  end
  vim.ui.select(items, {
    prompt = prompt,
    format_item = function(it)
      return it.label
    end,
  }, function(choice)
    if choice then
      edit(choice.uri)
    end
  end)
end

--- :Loom search WORDS — full-text search over every tree; pick a hit to open its path.
S.search = function(args, line)
  local query = line:match("^%s*search%s+(.-)%s*$")
  local function go(q)
    C.exec("loom.search", { query = q }, {
      on_done = function(result, ok)
        if not ok or type(result) ~= "table" or not result.data then
          return
        end
        local items = {}
        for _, h in ipairs(result.data.hits or {}) do
          items[#items + 1] = {
            label = ("%s  [%s] %s"):format(h.treeTitle, h.label, h.snippet),
            uri = h.uri,
          }
        end
        vim.schedule(function()
          pick_and_open(items, ("Search: %s"):format(q))
        end)
      end,
    })
  end
  if query and query ~= "" then
    go(query)
  else
    vim.ui.input({ prompt = "Search every tree: " }, function(input)
      if input and input ~= "" then
        go(input)
      end
    end)
  end
end

--- :Loom bookmarks — every bookmark (workspace/symbol), pick one to open its path.
S.bookmarks = function()
  loom.request("workspace/symbol", { query = "" }, function(symbols, err)
    if err then
      loom.notify(loom.failure(err), vim.log.levels.ERROR)
      return
    end
    local items = {}
    for _, s in ipairs(symbols or {}) do
      if vim.startswith(s.name, "★") then
        items[#items + 1] = { label = ("%s  (%s)"):format(s.name, s.containerName or ""), uri = s.location.uri }
      end
    end
    pick_and_open(items, "Bookmarks")
  end)
end

S.annotate = function(args, line)
  local uri = current_uri()
  if not uri then
    return
  end
  local text = line:match("^%s*annotate%s+(.-)%s*$")
  local target = C.node_at_cursor()
  local function send(t)
    C.exec("loom.annotate", vim.tbl_extend("force", { uri = uri, text = t }, target))
  end
  if text and text ~= "" then
    send(text)
  else
    vim.ui.input({ prompt = "Annotate: " }, function(input)
      if input and input ~= "" then
        send(input)
      end
    end)
  end
end

S.run = function(args)
  local uri = current_uri()
  if not uri then
    return
  end
  local line = tonumber(args[1]) or api.nvim_win_get_cursor(0)[1]
  C.exec("loom.run", { uri = uri, line = line - 1 })
end

S.commit = function()
  local uri = current_uri()
  if uri then
    C.exec("loom.commit", { uri = uri }, { commits = true, echo = true })
  end
end

S.cancel = function()
  C.exec("loom.cancel", vim.empty_dict(), { echo = true })
end

--- :Loom ask [MESSAGE] — one collaborator turn in this tree; its message comes back as a
--- notification, the whole turn in loom://conversation/collaborator/TREE.
S.ask = function(args)
  local uri = current_uri()
  if not uri then
    return
  end
  local message = table.concat(args or {}, " ")
  loom.notify("Loom: the collaborator is working… (:Loom stop to stop it)")
  C.exec("loom.askCollaborator", { uri = uri, message = message ~= "" and message or nil },
    { commits = true, echo = true })
end

--- :Loom stop — stop the collaborator's turn.
S.stop = function()
  C.exec("loom.stopCollaborator", { uri = current_uri() }, { echo = true })
end

--- :Loom explore [OPTIONS] — the collaborator explores from the node at the cursor, with
--- → explore's options as typed (depth:2 n:3 judge:"…"); without them it asks for the
--- judge's rubric and takes the defaults. :Loom explore end stops the tree's exploration
--- (as :Loom cancel does when no generation runs).
S.explore = function(args, line)
  local uri = current_uri()
  if not uri then
    return
  end
  local options = (line or ""):match("^%s*explore%s+(.-)%s*$") or ""
  if options == "end" or options == "stop" then -- (stop: the old spelling)
    C.exec("loom.stopExploring", { uri = uri }, { echo = true })
    return
  end
  local target = C.node_at_cursor()
  local function send(opts)
    C.exec("loom.explore", vim.tbl_extend("force", { uri = uri, options = opts }, target),
      { commits = true, echo = true })
  end
  if options ~= "" then
    send(options)
    return
  end
  vim.ui.input({ prompt = "What makes a good branch? (empty: the default rubric) " }, function(input)
    if input == nil then
      return
    end
    input = vim.trim(input):gsub('"', "'")
    send(input ~= "" and ('judge:"' .. input .. '"') or "")
  end)
end

S.import = function(args)
  if not args[1] then
    loom.notify("usage: :Loom import FILE", vim.log.levels.ERROR)
    return
  end
  -- The editor reads the file (the server reads files only inside the workspace folder)
  -- and sends its text.
  local path = vim.fn.fnamemodify(vim.fn.expand(args[1]), ":p")
  local f = io.open(path, "rb")
  if not f then
    loom.notify("✗ NOT_FOUND: cannot read " .. path, vim.log.levels.ERROR)
    return
  end
  local content = f:read("*a")
  f:close()
  local res, err = loom.request_sync("loom/import", { content = content, name = vim.fn.fnamemodify(path, ":t") })
  if not res or res.ok == false then
    loom.notify(res and res.message or loom.failure(err), vim.log.levels.ERROR)
    return
  end
  local trees = res.trees or {}
  local names = {}
  for _, t in ipairs(trees) do
    names[#names + 1] = ('"%s"'):format(t.title)
  end
  loom.notify(("✓ imported %d tree%s %s"):format(#trees, #trees == 1 and "" or "s", table.concat(names, ", ")))
  if trees[1] then
    edit(trees[1].pathUri or trees[1].uri) -- at the file's current node
  end
end

--- export formats: Loom's own, then the other looms' files (what they cannot hold is said)
local FORMAT_LIST = { "openloom", "md", "loom", "socketteer", "loomsidian", "miniloom", "tapestry" }
local FORMATS = {}
for _, name in ipairs(FORMAT_LIST) do
  FORMATS[name] = true
end

S.export = function(args)
  local format, file = "openloom", nil
  for _, a in ipairs(args) do
    if FORMATS[a] then
      format = a
    else
      file = a
    end
  end
  local tree = buffers.parse(buffers.uri(0)).tree
  local function go(tree_id)
    -- The server returns the text; the editor writes the file the user named (the server
    -- writes files only inside the workspace folder).
    local res, err = loom.request_sync("loom/export", { tree = tree_id, format = format })
    if not res or res.ok == false then
      loom.notify(res and res.message or loom.failure(err), vim.log.levels.ERROR)
      return
    end
    -- what the other loom cannot hold, from the result's lines after the first
    local said = res.message or ""
    if res.base64 and not file then
      loom.notify("✗ INVALID_SYNTAX: a " .. format .. " export is a binary file\n  hint: "
        .. ":Loom export " .. format .. " FILE" .. (res.extension or ""), vim.log.levels.ERROR)
      return
    end
    if file then
      local path = vim.fn.fnamemodify(vim.fn.expand(file), ":p")
      local ok
      if res.base64 then
        local fh = io.open(path, "wb")
        ok = fh and fh:write(vim.base64.decode(res.base64)) and 0 or 1
        if fh then
          fh:close()
        end
      else
        ok = vim.fn.writefile(vim.split(res.text or "", "\n", { plain = true }), path, "b")
      end
      if ok ~= 0 then
        loom.notify("✗ NOT_FOUND: cannot write " .. path, vim.log.levels.ERROR)
      else
        local rest = said:match("\n(.*)$")
        loom.notify("✓ exported to " .. path .. (rest and ("\n" .. rest) or ""))
      end
      return
    end
    vim.cmd("new")
    local buf = api.nvim_get_current_buf()
    vim.bo[buf].buftype = "nofile"
    vim.bo[buf].bufhidden = "wipe"
    api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(res.text or "", "\n", { plain = true }))
    vim.bo[buf].filetype = format == "md" and "markdown" or (format == "openloom" and "json" or "")
  end
  if tree then
    go(tree)
  else
    select_tree("Export which tree", function(t)
      go(t.id)
    end)
  end
end

S.status = function()
  local uri = current_uri()
  if not uri then
    return
  end
  local res, err = loom.request_sync("loom/status", { uri = uri })
  if not res then
    loom.notify(loom.failure(err), vim.log.levels.ERROR)
    return
  end
  loom.notify(("[%s] depth %s%s · %s"):format(res.label or "?", tostring(res.depth or "?"),
    res.generating and " · generating…" or "", res.participant or ""))
end

function C.dispatch(opts)
  local args = vim.deepcopy(opts.fargs)
  local sub = table.remove(args, 1)
  if not sub then
    S.open({}, "")
    return
  end
  local fn = S[sub]
  if not fn then
    loom.notify("✗ unknown :Loom subcommand " .. sub .. " (try: " .. table.concat(C.names(), ", ") .. ")", vim.log.levels.ERROR)
    return
  end
  fn(args, opts.args)
end

function C.names()
  local names = vim.tbl_keys(S)
  table.sort(names)
  return names
end

--- Titles (and ids) for `:Loom open`: the whole typed text after `open` is matched
--- against each title, and each item is the rest of the title from the word being typed
--- (what Neovim replaces), so "The Ho<Tab>" becomes "The House at the End of the Lane".
function C.complete_titles(arglead, cmdline)
  local client = loom.client(false)
  if not client then
    return {}
  end
  local res = client:request_sync("loom/trees", {}, 2000, 0)
  local typed = cmdline:match("^%s*%S+%s+open%s+(.*)$") or ""
  local before = typed:sub(1, #typed - #arglead)
  local out = {}
  for _, t in ipairs(res and res.result or {}) do
    for _, name in ipairs({ t.title, t.id }) do
      if name and name:lower():sub(1, #typed) == typed:lower() then
        out[#out + 1] = name:sub(#before + 1)
      end
    end
  end
  return out
end

function C.complete(arglead, cmdline)
  local words = vim.split(cmdline, "%s+", { trimempty = true })
  local n = #words + (cmdline:match("%s$") and 1 or 0)
  local function filter(list)
    return vim.tbl_filter(function(x)
      return vim.startswith(x, arglead)
    end, list)
  end
  if n <= 2 then
    return filter(C.names())
  end
  local sub = words[2]
  if sub == "export" then
    return filter(FORMAT_LIST)
  elseif sub == "import" then
    return vim.fn.getcompletion(arglead, "file")
  elseif sub == "open" then
    return C.complete_titles(arglead, cmdline)
  elseif sub == "model" then
    local client = loom.client(false)
    local res = client and client:request_sync("workspace/executeCommand",
      { command = "loom.models", arguments = { { uri = current_uri() } } }, 2000, 0)
    local names = { "default" }
    local data = res and res.result and res.result.data or {}
    for _, m in ipairs(data.models or {}) do
      names[#names + 1] = m.name
    end
    for _, p in ipairs(data.presets or {}) do
      names[#names + 1] = "preset:" .. p.name
    end
    names[#names + 1] = "preset:none"
    return filter(names)
  end
  return {}
end

function C.setup()
  -- commands the server puts on inlay hints and lenses that open a picker here
  vim.lsp.commands["loom.siblings"] = function(command)
    local args = (command.arguments or {})[1] or {}
    require("loom.siblings").open(args, C.exec)
  end
end

--- What each `<Plug>(loom-…)` mapping does (loom.keymaps lists them with their keys).
C.actions = {
  continue = function()
    S.continue({})
  end,
  fill = function()
    -- from visual mode: leave it first, so '< and '> are this selection
    local mode = vim.fn.mode()
    if mode == "v" or mode == "V" or mode == "\22" then
      vim.cmd("normal! \27")
    end
    S.fill({})
  end,
  next_sibling = S.next,
  prev_sibling = S.prev,
  siblings = S.siblings,
  diff = function()
    S.diff({})
  end,
  run = function()
    S.run({})
  end,
  annotate = function()
    S.annotate({}, "")
  end,
  branch = S.branch,
  bookmark = function()
    vim.ui.input({ prompt = "Bookmark label (optional): " }, function(input)
      if input ~= nil then
        act("bookmark", input ~= "" and input or nil)
      end
    end)
  end,
  prune = S.prune,
  search = function()
    S.search({}, "search")
  end,
  commit = S.commit,
  tree = S.tree,
  picture = function()
    S.picture({})
  end,
  cancel = S.cancel,
  ask = function()
    S.ask({})
  end,
  probabilities = function()
    S.probabilities({})
  end,
  score = function()
    S.score({})
  end,
  suggest = function()
    S.suggest({})
  end,
  alternatives = S.alternatives,
  goto_node = function()
    vim.lsp.buf.definition()
  end,
  suggestion_next = function()
    require("loom.suggest").cycle(1, api.nvim_get_current_buf())
  end,
  suggestion_prev = function()
    require("loom.suggest").cycle(-1, api.nvim_get_current_buf())
  end,
  suggestion_accept = function()
    require("loom.suggest").accept(nil, api.nvim_get_current_buf())
  end,
  suggestion_accept_word = function()
    require("loom.suggest").accept("word", api.nvim_get_current_buf())
  end,
  suggestion_accept_line = function()
    require("loom.suggest").accept("line", api.nvim_get_current_buf())
  end,
  suggestion_dismiss = function()
    require("loom.suggest").dismiss(api.nvim_get_current_buf())
  end,
}

--- Run the action behind `<Plug>(loom-NAME)`.
function C.action(name)
  local fn = C.actions[name]
  if not fn then
    loom.notify("✗ unknown Loom action " .. tostring(name), vim.log.levels.ERROR)
    return
  end
  fn()
end

--- Buffer-local default keys in loom buffers (setup{ keymaps = false } turns them off).
function C.keymaps(buf)
  require("loom.keymaps").apply(buf, loom.config)
end

return C
