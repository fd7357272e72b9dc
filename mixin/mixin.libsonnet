// failover_exporter monitoring mixin: the alert rules of prometheus/alerts.yml
// and the dashboards of grafana/dashboards/, with the selectors and labels of
// _config applied (see README.md). With the default _config the output is
// exactly those files.
(import 'config.libsonnet') +
(import 'alerts.libsonnet') +
(import 'rules.libsonnet') +
(import 'dashboards.libsonnet')
