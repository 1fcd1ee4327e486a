// The text of a value as YAML and as JSON, exactly as
// std.manifestYamlDoc(value, indent_array_in_object=true, quote_keys=false) and
// std.manifestJsonEx(value, '  ') write it, in a fraction of their time. Debian's jsonnet (the
// C++ one) runs those from its standard library, written in jsonnet: std.escapeStringJson
// loops over every character (10 ms for a 90-character string) and the YAML key check builds
// several character sets per key, 45 s for all of deploy/. Here strings are escaped with
// std.strReplace, which is native. deploy/generate.sh renders with these and CI diffs the
// result against deploy/.
local set(chars) = { [c]: true for c in std.stringChars(chars) };
local letters = set('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ');
local identifier = set('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./');
local floatLike = set('0123456789e._-');
local reserved = { [word]: true for word in ['true', 'false', 'yes', 'no', 'on', 'off', 'y', 'n', 'null'] };
// std.escapeStringJson: `\\`, `"` and the control characters escaped as JSON escapes them.
local replacements =
  [['\\', '\\\\'], ['"', '\\"'], ['\n', '\\n'], ['\t', '\\t'], ['\r', '\\r'], ['\b', '\\b'], ['\f', '\\f']]
  + [
    [std.char(cp), '\\u%04x' % cp]
    for cp in std.range(0, 31) + std.range(127, 159)
    if cp != 8 && cp != 9 && cp != 10 && cp != 12 && cp != 13
  ];
local escape(text) = '"' + std.foldl(function(done, r) std.strReplace(done, r[0], r[1]), replacements, text) + '"';

local only(chars, text) = [c for c in std.stringChars(text) if !std.objectHas(chars, c)] == [];

// A key as std writes it unquoted. An identifier that YAML cannot read as anything but a string
// is written bare, as std writes it; anything else (a number, a reserved word, another
// character) is rare enough to ask std itself.
local yamlKey(key) =
  local lower = std.asciiLower(key);
  if std.length(key) > 0 && std.objectHas(letters, key[0]) && only(identifier, key)
     && !std.objectHas(reserved, lower) && !only(floatLike, lower)
  then key
  else
    local line = std.manifestYamlDoc({ [key]: 0 }, quote_keys=false);
    std.substr(line, 0, std.length(line) - std.length(': 0'));

local nonEmpty(value) = (std.isArray(value) || std.isObject(value)) && std.length(value) > 0;

local yaml(value, indent) =
  local deeper = indent + '  ';
  if value == true then 'true'
  else if value == false then 'false'
  else if value == null then 'null'
  else if std.isNumber(value) then '' + value
  else if std.isString(value) then
    if value == '' then '""'
    else if std.endsWith(value, '\n') then
      local lines = std.split(value, '\n');
      std.join('\n' + deeper, ['|'] + lines[0:std.length(lines) - 1])
    else escape(value)
  else if std.length(value) == 0 then (if std.isArray(value) then '[]' else '{}')
  else if std.isArray(value) then
    std.join('\n' + indent, [
      if std.isArray(item) && std.length(item) > 0 then '-\n' + deeper + yaml(item, deeper)
      else if nonEmpty(item) then '- ' + yaml(item, deeper)
      else '- ' + yaml(item, indent)
      for item in value
    ])
  else
    std.join('\n' + indent, [
      yamlKey(key) + (
        if nonEmpty(value[key]) then ':\n' + deeper + yaml(value[key], deeper)
        else ': ' + yaml(value[key], indent)
      )
      for key in std.objectFields(value)
    ]);

local json(value, indent) =
  local deeper = indent + '  ';
  if std.isString(value) then escape(value)
  else if std.isArray(value) && value == [] then '[\n\n' + indent + ']'
  else if std.isObject(value) && std.length(value) == 0 then '{\n\n' + indent + '}'
  else if !nonEmpty(value) then std.manifestJsonEx(value, '  ')
  else if std.isArray(value) then
    '[\n' + std.join(',\n', [deeper + json(item, deeper) for item in value]) + '\n' + indent + ']'
  else
    '{\n' + std.join(',\n', [
      deeper + escape(key) + ': ' + json(value[key], deeper)
      for key in std.objectFields(value)
    ]) + '\n' + indent + '}';

{
  yaml(value):: yaml(value, ''),
  json(value):: json(value, ''),
}
