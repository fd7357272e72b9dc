// Rewrites PromQL expressions as text: jsonnet has no PromQL parser, so this
// is a small lexer (the same one as internal/contract's MetricNamesInExpr)
// that skips strings, comments, range brackets and numbers, and tells metric
// names apart from function, aggregation and keyword names.
//
//   withSelector(expr, 'job="x"')     every vector selector gets the matcher:
//                                      foo -> foo{job="x"}, foo{a="b"} -> foo{job="x",a="b"}
//   withGroupLabels(expr, ['namespace']) every `by (...)` and `on (...)` list
//                                      also keeps/matches these labels
//
// Both return expr unchanged when given nothing to add.
local aggregators = std.set(['sum', 'min', 'max', 'avg', 'group', 'stddev', 'stdvar', 'count', 'count_values', 'bottomk', 'topk', 'quantile', 'limitk', 'limit_ratio']);
local grouping = std.set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
local keywords = std.set(['bool', 'and', 'or', 'unless', 'offset', 'inf', 'nan', 'atan2', 'start', 'end']);

local isDigit(c) = c >= '0' && c <= '9';
local isIdentStart(c) = c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
local isIdentChar(c) = isIdentStart(c) || isDigit(c);
local isSpace(c) = c == ' ' || c == '\t' || c == '\n' || c == '\r';
local isQuote(c) = c == '"' || c == "'" || c == '`';

// The index of the first character at or after i that fails pred.
local skipWhile(s, i, pred) =
  if i < std.length(s) && pred(s[i]) then skipWhile(s, i + 1, pred) tailstrict else i;

// s[i] is an opening quote; returns the index after the closing one.
local skipString(s, i) =
  local quote = s[i];
  local loop(j) =
    if j >= std.length(s) then j
    else if s[j] == quote then j + 1
    else if s[j] == '\\' && quote != '`' then loop(j + 2) tailstrict
    else loop(j + 1) tailstrict;
  loop(i + 1);

// s[i] is an opener; returns the index after its closer (strings skipped).
local skipUntil(s, i, closer) =
  local loop(j) =
    if j >= std.length(s) then j
    else if isQuote(s[j]) then loop(skipString(s, j)) tailstrict
    else if s[j] == closer then j + 1
    else loop(j + 1) tailstrict;
  loop(i + 1);

local skipLine(s, i) = skipWhile(s, i, function(c) c != '\n');

// rewrite walks expr token by token and lets the callbacks change two kinds
// of token: a label matcher block `{...}` (braces(text, hasName)) and the
// label list of a grouping word (groupList(word, text), text is `(...)`).
// A metric name with no braces is handed to braces as '' with hasName true.
local rewrite(expr, braces, groupList) =
  local n = std.length(expr);
  local step(i, out) =
    if i >= n then out
    else
      local c = expr[i];
      if isQuote(c) then
        local j = skipString(expr, i);
        step(j, out + expr[i:j]) tailstrict
      else if c == '{' then
        local j = skipUntil(expr, i, '}');
        step(j, out + braces(expr[i:j])) tailstrict
      else if c == '[' then
        local j = skipUntil(expr, i, ']');
        step(j, out + expr[i:j]) tailstrict
      else if c == '#' then
        local j = skipLine(expr, i);
        step(j, out + expr[i:j]) tailstrict
      else if isDigit(c) || (c == '.' && i + 1 < n && isDigit(expr[i + 1])) then
        local j = skipWhile(expr, i, function(x) isIdentChar(x) || x == '.');
        step(j, out + expr[i:j]) tailstrict
      else if isIdentStart(c) then
        local j = skipWhile(expr, i, isIdentChar);
        local word = expr[i:j];
        local next = skipWhile(expr, j, isSpace);
        local nextChar = if next < n then expr[next] else '';
        if std.setMember(word, grouping) && nextChar == '(' then
          local k = skipUntil(expr, next, ')');
          step(k, out + expr[i:next] + groupList(word, expr[next:k])) tailstrict
        // A grouping word without a list (`group_left` alone) is a keyword.
        else if std.setMember(word, keywords) || std.setMember(word, aggregators) || std.setMember(word, grouping) || nextChar == '(' || nextChar == '{' then
          step(j, out + word) tailstrict
        else
          step(j, out + word + braces('')) tailstrict
      else
        step(i + 1, out + c) tailstrict;
  step(0, '');

local keep(text) = text;
local keepList(word, text) = text;

{
  withSelector(expr, selector)::
    if selector == '' then expr
    else rewrite(
      expr,
      function(text)
        if text == '' then '{' + selector + '}'
        else if std.stripChars(text[1:std.length(text) - 1], ' \t\n') == '' then '{' + selector + '}'
        else '{' + selector + ',' + text[1:],
      keepList,
    ),

  withGroupLabels(expr, labels)::
    if labels == [] then expr
    else rewrite(
      expr,
      function(text) text,
      function(word, text)
        if word != 'by' && word != 'on' then text
        else
          local inner = std.stripChars(text[1:std.length(text) - 1], ' \t\n');
          local have = [std.stripChars(l, ' \t\n') for l in std.split(inner, ',')];
          local add = [l for l in labels if !std.member(have, l)];
          if add == [] then text
          else if inner == '' then '(' + std.join(', ', add) + ')'
          else '(' + inner + ', ' + std.join(', ', add) + ')',
    ),
}
