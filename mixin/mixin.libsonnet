// reputation-exporter's monitoring mixin: alerts, recording rules and the dashboard, all
// configured by _config (config.libsonnet).
(import 'config.libsonnet')
+ (import 'alerts/alerts.libsonnet')
+ (import 'rules/rules.libsonnet')
+ (import 'dashboards/dashboard.libsonnet')
