// The plain files under deploy/ for everyone who does not use jsonnet, rendered from the mixin:
//   jsonnet -S -m deploy mixin/render.jsonnet
// (deploy/generate.sh runs it). `config` is merged into _config, e.g.
//   --tla-code 'config={runbookUrl: "https://wiki.example.com/reputation/runbook"}'
function(config={})
  local mixin = (import 'mixin.libsonnet') + { _config+:: config };
  local generated = '# Generated from mixin/ by deploy/generate.sh; change mixin/config.libsonnet (or the\n'
                    + '# mixin) and run it again.\n';
  local manifest = import 'lib/manifest.libsonnet';
  local yaml(value) = manifest.yaml(value) + '\n';
  {
    'prometheus/alerts.yml': '# Alerting rules for reputation-exporter; their runbook is docs/runbook.md.\n'
                             + generated + yaml(mixin.prometheusAlerts),
    'prometheus/rules.yml': '# Recording rules for reputation-exporter (level:metric:operations).\n'
                            + generated + yaml(mixin.prometheusRules),
    // A hashmod-sharded fleet (metrics.shards): what each server evaluates, on its shards (the
    // per-asset and health alerts, and the recording rules, which reduce its shards to a few
    // hundred series), and what the global view evaluates (Thanos / Mimir ruler, or the
    // federating server), which holds those results and the shards' own series, not every
    // asset: the account-wide alerts.
    local group(name) = [g for g in mixin.prometheusAlerts.groups if g.name == name],
    'prometheus/fleet/alerts-servers.yml': '# What each server of a hashmod-sharded fleet evaluates on the shards it scrapes: the\n'
                                           + '# per-asset and health alerts, and the recording rules the global view reads.\n'
                                           + generated + yaml({ groups: group('reputation.alerts') + mixin.prometheusRules.groups }),
    'prometheus/fleet/alerts-global.yml': '# What the global view of a sharded fleet evaluates (Thanos or Mimir ruler, the\n'
                                          + '# federating Prometheus, or vmalert over VictoriaMetrics): the account-wide alerts, over\n'
                                          + "# the recording rules the servers send it and the shards' own series.\n"
                                          + generated
                                          + yaml({ groups: group('reputation.fleet') }),
    'grafana/dashboard.json': manifest.json(mixin.grafanaDashboards['reputation-exporter.json']) + '\n',
    'kubernetes/prometheusrule.yaml': '# The alerts and recording rules as a prometheus-operator PrometheusRule.\n'
                                      + generated
                                      + yaml({
                                        apiVersion: 'monitoring.coreos.com/v1',
                                        kind: 'PrometheusRule',
                                        metadata: {
                                          name: 'reputation-exporter',
                                          labels: { 'app.kubernetes.io/name': 'reputation-exporter' },
                                        },
                                        spec: {
                                          groups: mixin.prometheusAlerts.groups + mixin.prometheusRules.groups,
                                        },
                                      }),
  }
