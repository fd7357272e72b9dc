{
  _config+:: {
    // A label matcher added to every vector selector of every alert
    // expression and every dashboard query (targets, annotations, variables),
    // e.g. 'job="failover-exporter"' or 'job="failover-exporter",namespace="kafka"'.
    // '' adds nothing.
    selector: '',

    // Labels added to every `by (...)` and `on (...)` list of the alert
    // expressions, so that alerts keep them (e.g. ['namespace'], or
    // ['cluster'] when one Prometheus or Thanos sees several Kubernetes
    // clusters). The dashboards are unchanged: they show one cluster at a time.
    groupLabels: [],

    // Default Prometheus data source of the dashboards' "datasource"
    // variable (its name, e.g. 'Prometheus'); null leaves Grafana's choice.
    datasource: null,
    // Regex limiting the data sources the variable offers; '' offers all.
    datasourceRegex: '',

    // Where the alerts' runbook_url annotations point: the anchor of each
    // alert (its name in lower case) is appended to this.
    runbookURLBase: 'https://github.com/failover-exporter/failover_exporter/blob/main/docs/runbooks.md#',

    // The severity label each shipped severity becomes.
    severities: {
      critical: 'critical',
      warning: 'warning',
      info: 'info',
    },

    // Labels added to every alert (e.g. { team: 'platform' }).
    alertLabels: {},
  },
}
