// The alerts are prometheus/alerts.yml itself, with _config applied.
local promql = import 'lib/promql.libsonnet';

// The runbook base the shipped rules use; _config.runbookURLBase replaces it.
local shippedRunbookBase = 'https://github.com/failover-exporter/failover_exporter/blob/main/docs/runbooks.md#';

{
  local config = self._config,
  local shipped = std.parseYaml(importstr '../prometheus/alerts.yml'),

  local alert(rule) =
    rule {
      expr: promql.withGroupLabels(promql.withSelector(rule.expr, config.selector), config.groupLabels),
      labels+: config.alertLabels + (
        if std.objectHas(rule.labels, 'severity') && std.objectHas(config.severities, rule.labels.severity)
        then { severity: config.severities[rule.labels.severity] }
        else {}
      ),
      annotations+: (
        local url = std.get(rule.annotations, 'runbook_url', '');
        if std.startsWith(url, shippedRunbookBase)
        then { runbook_url: config.runbookURLBase + url[std.length(shippedRunbookBase):] }
        else {}
      ),
    },

  prometheusAlerts+:: {
    groups+: [
      group { rules: [alert(rule) for rule in group.rules] }
      for group in shipped.groups
    ],
  },
}
