-- The environment EVAL scripts run in, built once per Lua VM (vm.rs).
-- Called with the table of native (Rust) functions; returns the
-- environment table scripts see as their globals and the function that
-- runs one compiled script under the error handler.
--
-- Scripts read globals through a read-only view: reading a name that does
-- not exist and writing any global are errors, and the library tables are
-- read-only views too (Redis 7.0 makes them read-only tables).
local native = ...
local G = _G
local getinfo = debug.getinfo
local error, type, tostring, select, tonumber = error, type, tostring, select, tonumber
local pairs, ipairs = pairs, ipairs
local rawget, rawset, setmetatable, getmetatable = rawget, rawset, setmetatable, getmetatable
local pcall, xpcall, setfenv, loadstring = pcall, xpcall, setfenv, loadstring
local sub, byte, concat, floor = string.sub, string.byte, table.concat, math.floor

local READONLY = 'Attempt to modify a readonly table'
local protected = setmetatable({}, {__mode = 'k'})

local function refuse()
  error(READONLY, 2)
end

-- A read-only view of t. Its metatable, as getmetatable shows it, is a
-- read-only table too, and it leads back to the view, never to t.
local function readonly(t)
  local view, face = {}, {}
  setmetatable(face, {__index = {__index = view, __newindex = refuse},
                      __newindex = refuse, __metatable = face})
  setmetatable(view, {__index = t, __newindex = refuse, __metatable = face})
  protected[view] = true
  protected[face] = true
  return view
end

local err = native.error_table

local function raise(msg)
  error(err(msg), 0)
end

-- redis.* ------------------------------------------------------------------
local redis = {}
-- Native C functions (api.rs): a C function keeps the script's frame on
-- the stack, so they need no cwrap.
redis.call = native.call
redis.pcall = native.pcall

redis.error_reply = function(...)
  local e = ...
  if select('#', ...) ~= 1 or type(e) ~= 'string' then
    return err('wrong number or type of arguments')
  end
  if sub(e, 1, 1) ~= '-' then e = '-' .. e end
  return err(e)
end

redis.status_reply = function(...)
  local s = ...
  if select('#', ...) ~= 1 or type(s) ~= 'string' then
    return err('wrong number or type of arguments')
  end
  return {ok = s}
end

redis.sha1hex = function(...)
  if select('#', ...) ~= 1 then raise('wrong number of arguments') end
  return native.sha1hex((...))
end

redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3

redis.log = function(...)
  local n = select('#', ...)
  if n < 2 then raise('redis.log() requires two arguments or more.') end
  local level = tonumber((...))
  if not level then raise('First argument must be a number (log level).') end
  level = floor(level)
  if level < 0 or level > 3 then raise('Invalid debug level.') end
  local parts = {}
  for i = 2, n do
    local v = select(i, ...)
    local t = type(v)
    if t == 'string' or t == 'number' then parts[#parts + 1] = tostring(v) end
  end
  native.log(level, concat(parts, ' '))
end

redis.setresp = function(...)
  if select('#', ...) ~= 1 then raise('redis.setresp() requires one argument.') end
  local resp = tonumber((...))
  if resp ~= 2 and resp ~= 3 then raise('RESP version must be 2 or 3.') end
  native.setresp(resp)
end

-- Which of a script's writes reach the AOF (REPL_AOF) and replicas (REPL_REPLICA).
redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL =
  0, 1, 2, 2, 3
redis.set_repl = function(...)
  -- "two arguments": sic, Redis 7.0's text.
  if select('#', ...) ~= 1 then raise('redis.set_repl() requires two arguments.') end
  local flags = tonumber((...)) or 0
  if flags < 0 or flags > 3 or flags ~= floor(flags) then
    raise('Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.')
  end
  native.set_repl(flags)
end

redis.acl_check_cmd = function(...)
  if select('#', ...) == 0 then
    raise('Please specify at least one argument for this redis lib call')
  end
  local allowed, err = native.acl_check(...)
  if allowed == nil then raise(err) end
  return allowed
end

-- Redis 7 always replicates a script's effects.
redis.replicate_commands = function() return true end
-- The debugger's (ldb/): no-ops outside a SCRIPT DEBUG session.
redis.breakpoint = native.breakpoint
redis.debug = native.debug

redis.REDIS_VERSION = native.version
redis.REDIS_VERSION_NUM = native.version_num

-- math.random and math.randomseed on Redis's own generator: the same
-- sequence for the same seed on every platform.
local function int_arg(i, name, v)
  local n = tonumber(v)
  if not n then
    error("bad argument #" .. i .. " to '" .. name .. "' (number expected, got " ..
          (v == nil and 'no value' or type(v)) .. ")", 0)
  end
  return n >= 0 and floor(n) or -floor(-n)
end

local math_random = function(...)
  local r = native.rand()
  local n = select('#', ...)
  if n == 0 then return r end
  local a, b = ...
  if n == 1 then
    local u = int_arg(1, 'random', a)
    if u < 1 then error("bad argument #1 to 'random' (interval is empty)", 0) end
    return floor(r * u) + 1
  elseif n == 2 then
    local l, u = int_arg(1, 'random', a), int_arg(2, 'random', b)
    if l > u then error("bad argument #2 to 'random' (interval is empty)", 0) end
    return floor(r * (u - l + 1)) + l
  end
  error('wrong number of arguments', 0)
end

local math_randomseed = function(seed)
  native.srand(int_arg(1, 'randomseed', seed))
end

-- Lua-written API functions are called through a C function (see
-- api.rs's cwrap) so that a script's error line survives tail calls.
local cwrap = native.cwrap
for _, name in ipairs({'error_reply', 'status_reply', 'sha1hex',
                       'log', 'setresp', 'set_repl', 'acl_check_cmd', 'replicate_commands',
                       'breakpoint', 'debug'}) do
  redis[name] = cwrap(redis[name])
end
math_random = cwrap(math_random)
math_randomseed = cwrap(math_randomseed)

-- The environment ------------------------------------------------------------
local ENV = {}

local function fix_pcall(ok, ...)
  if ok then return true, ... end
  local e = ...
  if type(e) == 'table' and type(rawget(e, 'err')) == 'string' then
    return false, rawget(e, 'err')
  elseif type(e) == 'userdata' then
    return false, (native.errtext(e))
  end
  return false, e
end

local function safe_loadstring(s, name)
  if type(s) == 'string' and byte(s, 1) == 27 then
    return nil, 'binary chunks are not allowed'
  end
  local f, e = loadstring(s, name)
  if f then setfenv(f, ENV) end
  return f, e
end

local function safe_load(...)
  local reader, name = ...
  if type(reader) ~= 'function' then
    -- Level 3: the script calling load, past the C function around this one.
    error("bad argument #1 to 'load' (function expected, got " ..
          (select('#', ...) == 0 and 'no value' or type(reader)) .. ")", 3)
  end
  local parts = {}
  while true do
    local piece = reader()
    if piece == nil or piece == '' then break end
    if type(piece) ~= 'string' then return nil, 'reader function must return a string' end
    parts[#parts + 1] = piece
  end
  return safe_loadstring(concat(parts), name or '=(load)')
end

local allowed = {
  'xpcall', 'tostring', 'next', 'assert', 'tonumber', 'rawequal', 'collectgarbage',
  'rawget', 'type', 'select', 'unpack', 'gcinfo', 'pairs', 'ipairs', '_VERSION',
  'error', 'coroutine', 'string', 'math', 'table', 'cjson', 'bit', 'cmsgpack', 'struct',
}
local keep = {}
for _, name in ipairs(allowed) do keep[name] = G[name] end

local libs = {coroutine = true, string = true, math = true, table = true,
              cjson = true, bit = true, cmsgpack = true, struct = true}

-- The real string table stays reachable through string values' metatable:
-- that metatable now leads to the read-only view.
local math_copy = {}
for k, v in pairs(G.math) do math_copy[k] = v end
math_copy.random, math_copy.randomseed = math_random, math_randomseed
keep.math = math_copy

for name in pairs(libs) do
  if keep[name] then keep[name] = readonly(keep[name]) end
end
keep.redis = readonly(redis)
keep.pcall = cwrap(function(f, ...) return fix_pcall(pcall(f, ...)) end)
keep.loadstring = cwrap(safe_loadstring)
keep.load = cwrap(safe_load)
keep.setmetatable = cwrap(function(t, mt)
  if protected[t] then error(READONLY, 0) end
  return setmetatable(t, mt)
end)
keep.getmetatable = getmetatable
-- Lua 5.1.5's unpack overflows its stack check for huge ranges and brings
-- the process down; Redis's patched Lua refuses them.
local real_unpack = unpack
keep.unpack = cwrap(function(t, i, j, ...)
  local first = tonumber(i) or 1
  local last = tonumber(j) or (type(t) == 'table' and #t or 0)
  if last - first + 1 > 8000 then error('too many results to unpack', 3) end
  if j ~= nil then return real_unpack(t, i, j, ...) end
  if i ~= nil then return real_unpack(t, i) end
  return real_unpack(t)
end)
keep.rawset = cwrap(function(t, k, v)
  if protected[t] then error(READONLY, 0) end
  return rawset(t, k, v)
end)
keep._G = ENV

local string_mt = getmetatable('')
local string_face = {}
setmetatable(string_face, {__index = {__index = keep.string, __newindex = refuse},
                           __newindex = refuse, __metatable = string_face})
protected[string_face] = true
string_mt.__index = keep.string
string_mt.__metatable = string_face

-- Only the allowed names stay in the real globals table.
for k in pairs(G) do rawset(G, k, nil) end
for k, v in pairs(keep) do rawset(G, k, v) end

local env_face = {}
setmetatable(env_face, {__index = {__index = env_face, __newindex = refuse},
                        __newindex = refuse, __metatable = env_face})
-- FUNCTION LOAD runs a library's code with only the library API as its
-- globals (Redis's "load library globals"); `loading` is the list of the
-- functions it registered, set while it runs.
local loading = nil
local LOAD_G = {}

-- A name is looked up through tables, not a Lua function: ENV (empty, so
-- that every write reaches __newindex) leads to G, or to LOAD_G while a
-- library loads, and a name neither has reaches `missing`. A function
-- __index cost a Lua call per global read (KEYS, ARGV, redis).
local function missing(_, k)
  error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
end
setmetatable(G, {__index = missing})
setmetatable(LOAD_G, {__index = missing})
local env_mt = {__index = G, __newindex = refuse, __metatable = env_face}
setmetatable(ENV, env_mt)
protected[ENV] = true
protected[env_face] = true

-- Errors become {err=..., source=..., line=...}, where source and line are
-- those of the script's own frame nearest the error.
local function handler(e)
  local source, line
  local level = 2
  while true do
    local info = getinfo(level, 'Sl')
    if not info then break end
    if info.source == '@user_script' or info.source == '@user_function' then
      source, line = info.source, info.currentline
      break
    end
    level = level + 1
  end
  if type(e) ~= 'table' or protected[e] then
    local text, positioned = native.errtext(e)
    if positioned and line then
      text = sub(source, 2) .. ':' .. line .. ': ' .. text
    end
    e = {err = 'ERR ' .. text}
  end
  if source then
    rawset(e, 'source', source)
    rawset(e, 'line', line)
  end
  return e
end

local function run(f)
  return xpcall(f, handler)
end

-- Functions (FUNCTION LOAD, FCALL) -------------------------------------------
local lower, find = string.lower, string.find


-- A read-only view of t whose missing names are errors, as Redis's error
-- metatable makes them.
local function strict(t)
  local view, face = {}, {}
  setmetatable(face, {__index = {__index = view, __newindex = refuse},
                      __newindex = refuse, __metatable = face})
  setmetatable(view, {__index = function(_, k)
                        local v = t[k]
                        if v == nil then
                          error("Script attempted to access nonexistent global variable '" ..
                                tostring(k) .. "'", 2)
                        end
                        return v
                      end,
                      __newindex = refuse, __metatable = face})
  protected[view] = true
  protected[face] = true
  return view
end

-- Redis's scripts_flags_def, in its order (FUNCTION LIST shows them so).
local FLAG_NAMES = {'no-writes', 'allow-oom', 'allow-stale', 'no-cluster', 'allow-cross-slot-keys'}
local FLAG_BITS = {}
for i, name in ipairs(FLAG_NAMES) do FLAG_BITS[name] = 2 ^ (i - 1) end

local function is_str(v)
  local t = type(v)
  return t == 'string' or t == 'number'
end

local function register_function(...)
  if not loading then
    raise('redis.register_function can only be called on FUNCTION LOAD command')
  end
  local n = select('#', ...)
  if n < 1 or n > 2 then raise('wrong number of arguments to redis.register_function') end
  local name, callback, desc, flags = nil, nil, nil, 0
  if n == 1 then
    local t = ...
    if type(t) ~= 'table' then
      raise('calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).')
    end
    for k, v in next, t do
      if not is_str(k) then raise('named argument key given to redis.register_function is not a string') end
      local key = lower(tostring(k))
      if key == 'function_name' then
        if not is_str(v) then raise('function_name argument given to redis.register_function must be a string') end
        name = tostring(v)
      elseif key == 'description' then
        if not is_str(v) then raise('description argument given to redis.register_function must be a string') end
        desc = tostring(v)
      elseif key == 'callback' then
        if type(v) ~= 'function' then raise('callback argument given to redis.register_function must be a function') end
        callback = v
      elseif key == 'flags' then
        if type(v) ~= 'table' then raise('flags argument to redis.register_function must be a table representing function flags') end
        local i = 1
        while true do
          local f = v[i]
          if f == nil then break end
          local bit = is_str(f) and FLAG_BITS[lower(tostring(f))]
          if not bit then raise('unknown flag given') end
          if floor(flags / bit) % 2 == 0 then flags = flags + bit end
          i = i + 1
        end
      else
        raise('unknown argument given to redis.register_function')
      end
    end
    if not name then raise('redis.register_function must get a function name argument') end
    if not callback then raise('redis.register_function must get a callback argument') end
  else
    local a, b = ...
    if not is_str(a) then raise('first argument to redis.register_function must be a string') end
    if type(b) ~= 'function' then raise('second argument to redis.register_function must be a function') end
    name, callback = tostring(a), b
  end
  if not find(name, '^[%w_]+$') then
    raise('Library names can only contain letters, numbers, or underscores(_) and must be at least one character long')
  end
  for _, f in ipairs(loading) do
    if f[1] == name then raise('Function already exists in the library') end
  end
  loading[#loading + 1] = {name, callback, flags, desc}
end

local load_redis = {
  register_function = cwrap(register_function),
  log = redis.log,
  LOG_DEBUG = redis.LOG_DEBUG, LOG_VERBOSE = redis.LOG_VERBOSE,
  LOG_NOTICE = redis.LOG_NOTICE, LOG_WARNING = redis.LOG_WARNING,
  REDIS_VERSION = redis.REDIS_VERSION, REDIS_VERSION_NUM = redis.REDIS_VERSION_NUM,
}
rawset(LOAD_G, 'redis', strict(load_redis))

-- Runs a library's compiled code: true and the functions it registered
-- ({name, callback, flags, description} each), or false and the error.
local function load_library(f)
  local regs = {}
  loading = regs
  env_mt.__index = LOAD_G
  local ok, e = pcall(f)
  env_mt.__index = G
  loading = nil
  if not ok then return false, e end
  return true, regs
end

-- Runs a registered function with its keys and arguments.
local function call_function(f, keys, args)
  return xpcall(function() return f(keys, args) end, handler)
end

return ENV, run, load_library, call_function, FLAG_NAMES
