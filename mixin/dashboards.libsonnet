// The dashboards are grafana/dashboards/*.json themselves, with _config
// applied. A new dashboard file is added here too (the Go test in
// internal/mixin fails until it is).
local promql = import 'lib/promql.libsonnet';

local shipped = {
  'kafka-mirror.json': import '../grafana/dashboards/kafka-mirror.json',
  'kafka-replication.json': import '../grafana/dashboards/kafka-replication.json',
  'redis-cluster.json': import '../grafana/dashboards/redis-cluster.json',
  'redis-sentinel.json': import '../grafana/dashboards/redis-sentinel.json',
};

{
  local config = self._config,
  local expr(e) = promql.withSelector(e, config.selector),

  // label_values(selector, label) and query_result(expr) run PromQL; other
  // variable queries (label_names(), metrics(...)) are left alone.
  local variableQuery(q) =
    local t = std.stripChars(q, ' \t\n');
    if std.startsWith(t, 'label_values(') && std.endsWith(t, ')') then
      local args = t[std.length('label_values('):std.length(t) - 1];
      local commas = std.findSubstr(',', args);
      if commas == [] then 'label_values({' + config.selector + '}, ' + args + ')'
      else
        local last = commas[std.length(commas) - 1];
        'label_values(' + expr(args[:last]) + args[last:] + ')'
    else if std.startsWith(t, 'query_result(') && std.endsWith(t, ')') then
      'query_result(' + expr(t[std.length('query_result('):std.length(t) - 1]) + ')'
    else q,

  local variable(v) =
    if v.type == 'query' then
      v {
        query:
          if std.isString(v.query) then variableQuery(v.query)
          else if std.isObject(v.query) && std.objectHas(v.query, 'query') then v.query { query: variableQuery(v.query.query) }
          else v.query,
      } + (if std.isString(std.get(v, 'definition')) then { definition: variableQuery(v.definition) } else {})
    else if v.type == 'datasource' then
      v
      + (if config.datasource != null then { current: { selected: true, text: config.datasource, value: config.datasource } } else {})
      + (if config.datasourceRegex != '' then { regex: config.datasourceRegex } else {})
    else v,

  // Every "expr" in the dashboard is PromQL: panel targets (rows' panels
  // included) and annotations.
  local exprs(node) =
    if std.isObject(node) then
      { [k]: if k == 'expr' && std.isString(node[k]) then expr(node[k]) else exprs(node[k]) for k in std.objectFields(node) }
    else if std.isArray(node) then [exprs(x) for x in node]
    else node,

  local dashboard(d) =
    if config.selector == '' && config.datasource == null && config.datasourceRegex == '' then d
    else exprs(d) + {
      templating+: { list: [variable(v) for v in d.templating.list] },
    },

  grafanaDashboards+:: {
    [name]: dashboard(shipped[name])
    for name in std.objectFields(shipped)
  },
}
