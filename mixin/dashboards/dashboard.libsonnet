// The Grafana dashboard: fleet overview, per-asset drill-down, the exporter's health. Every
// query selects $job and $account (the label _config.accountLabel names) and takes one value
// of the replicas (_config.replicaLabel) that serve the same series; trend panels look
// back _config.trendLookback for the last sample, so daily history draws a step line.
local p = import '../lib/panels.libsonnet';

{
  local c = $._config,
  // What the queries are made of: the variables' selector, the replica label, the look-back.
  local v = {
    q: 'job=~"$job",%s=~"$account"' % c.accountLabel,
    i: c.replicaLabel,
    // One copy of the process' own series per exporter, however many slices serve it.
    s: c.shardLabel,
    l: c.trendLookback,
  },

  grafanaDashboards+:: {
    'reputation-exporter.json': {
      title: c.dashboardTitle,
      uid: c.dashboardUid,
      refresh: c.dashboardRefresh,
      tags: c.dashboardTags,
      description: "IP and domain sending reputation from reputation-exporter: Sender Score, blacklistings, Microsoft SNDS, and the exporter's own health.",
      schemaVersion: 39,
      version: 1,
      editable: true,
      graphTooltip: 1,
      time: {
        from: 'now-7d',
        to: 'now',
      },
      timezone: '',
      links: [],
      annotations: {
        list: [
          {
            datasource: p.datasource,
            name: 'Listings',
            enable: true,
            hide: false,
            iconColor: 'red',
            expr: 'max without (%(i)s) (last_over_time(reputation_blacklist_listed{%(q)s, kind=~"$kind", asset=~"$asset"}[%(l)s])) == 1' % v,
            step: '5m',
            titleFormat: '{{asset}} listed on {{blacklist}}',
            textFormat: 'From the listing to the delisting (asset reports, backfilled history included).',
            tagKeys: 'kind,asset,blacklist',
            useValueForTime: false,
          },
          {
            datasource: p.datasource,
            name: 'Blacklisted',
            enable: true,
            hide: false,
            iconColor: 'orange',
            expr: 'max without (%(i)s) (last_over_time(reputation_blacklistings{%(q)s, kind=~"$kind", asset=~"$asset"}[%(l)s])) > 0' % v,
            step: '5m',
            titleFormat: '{{asset}} on a blacklist',
            textFormat: "While the asset's blacklisting count is above 0 (lists, or backfilled history).",
            tagKeys: 'kind,asset',
            useValueForTime: false,
          },
        ],
      },
      templating: {
        list: [
          {
            name: 'datasource',
            label: 'Data source',
            type: 'datasource',
            query: 'prometheus',
            current: {},
            hide: 0,
            refresh: 1,
          },
          p.variable('job', 'Job', 'label_values(reputation_up{%s}, job)' % c.selector),
          p.variable(
            'account',
            'Account (%s)' % c.accountLabel,
            'label_values(reputation_up{job=~"$job"}, %s)' % c.accountLabel,
          ),
          p.variable('kind', 'Kind', 'label_values(reputation_asset_info, kind)'),
          p.variable('asset', 'Asset', 'label_values(reputation_asset_info{kind=~"$kind"}, asset)'),
        ],
      },
      panels: [
        p.row(1, 'Fleet overview', 0),
        p.panel(
          2,
          'stat',
          'Assets',
          p.grid(0, 1, 4, 4),
          [
            p.target('sum by (kind) (max without (%(i)s) (reputation_assets{%(q)s, kind=~"$kind"}))' % v, legend='{{kind}}', instant=true),
          ],
        ),
        p.panel(
          3,
          'stat',
          'Assets on a blacklist',
          p.grid(4, 1, 4, 4),
          [
            p.target('count(max without (%(i)s) (reputation_blacklistings{%(q)s, kind=~"$kind"}) > 0) or vector(0)' % v, instant=true),
          ],
          {
            fieldConfig: {
              defaults: {
                thresholds: p.thresholds([['green', null], ['red', 1]]),
              },
              overrides: [],
            },
          },
        ),
        p.panel(
          4,
          'stat',
          'Worst Sender Score',
          p.grid(8, 1, 4, 4),
          [
            p.target('min(reputation_senderscore{%(q)s, kind=~"$kind"})' % v, instant=true),
          ],
          {
            fieldConfig: {
              defaults: {
                min: 0,
                max: 100,
                thresholds: p.thresholds([['red', null], ['orange', c.senderScoreFloor], ['green', c.senderScoreGood]]),
              },
              overrides: [],
            },
          },
        ),
        p.panel(
          5,
          'stat',
          'SNDS green share',
          p.grid(12, 1, 4, 4),
          [
            p.target('sum(max without (%(i)s) (reputation_snds_reputation{%(q)s, kind=~"$kind", reputation_snds_reputation="green"})) / count(max without (%(i)s) (reputation_snds_reputation{%(q)s, kind=~"$kind", reputation_snds_reputation="green"}))' % v, instant=true),
          ],
          {
            fieldConfig: {
              defaults: {
                unit: 'percentunit',
                min: 0,
                max: 1,
              },
              overrides: [],
            },
          },
        ),
        p.panel(
          6,
          'bargauge',
          'Worst Sender Scores',
          p.grid(16, 1, 8, 9),
          [
            p.target('bottomk(15, min without (%(i)s) (reputation_senderscore{%(q)s, kind=~"$kind"}))' % v, legend='{{asset}}', instant=true),
          ],
          {
            options: {
              orientation: 'horizontal',
              displayMode: 'gradient',
            },
            fieldConfig: {
              defaults: {
                min: 0,
                max: 100,
                thresholds: p.thresholds([['red', null], ['orange', c.senderScoreFloor], ['green', c.senderScoreGood]]),
              },
              overrides: [],
            },
          },
        ),
        p.panel(
          7,
          'bargauge',
          'Assets listed per blacklist (asset reports)',
          p.grid(0, 5, 8, 5),
          [
            p.target('sum by (blacklist) (max without (%(i)s) (reputation_blacklist_listed{%(q)s, kind=~"$kind"}))' % v, legend='{{blacklist}}', instant=true),
          ],
          {
            options: {
              orientation: 'horizontal',
              displayMode: 'basic',
            },
          },
        ),
        p.panel(
          8,
          'table',
          'Blacklisted assets',
          p.grid(8, 5, 8, 5),
          [
            p.target('max without (%(i)s) (reputation_blacklistings{%(q)s, kind=~"$kind"}) > 0' % v, instant=true, format='table'),
          ],
          {
            transformations: [
              {
                id: 'organize',
                options: {
                  excludeByName: {
                    Time: true,
                    job: true,
                    __name__: true,
                  },
                  renameByName: {
                    Value: 'blacklists',
                  },
                },
              },
            ],
          },
        ),
        p.panel(
          9,
          'state-timeline',
          'SNDS colour',
          p.grid(0, 10, 24, 10),
          [
            p.target('2 * sum by (kind, asset) (last_over_time(reputation_snds_reputation{%(q)s, kind=~"$kind", reputation_snds_reputation="green"}[%(l)s])) + sum by (kind, asset) (last_over_time(reputation_snds_reputation{%(q)s, kind=~"$kind", reputation_snds_reputation="yellow"}[%(l)s]))' % v, legend='{{asset}}'),
          ],
          {
            fieldConfig: {
              defaults: {
                mappings: [
                  {
                    type: 'value',
                    options: {
                      '0': {
                        text: 'red',
                        color: 'red',
                      },
                      '1': {
                        text: 'yellow',
                        color: 'yellow',
                      },
                      '2': {
                        text: 'green',
                        color: 'green',
                      },
                    },
                  },
                ],
                color: {
                  mode: 'thresholds',
                },
                thresholds: p.thresholds([['red', null], ['yellow', 1], ['green', 2]]),
              },
              overrides: [],
            },
            options: {
              showValue: 'never',
              mergeValues: true,
            },
          },
        ),
        p.panel(
          26,
          'timeseries',
          'Assets listed per blacklist over time (asset reports)',
          p.grid(0, 20, 24, 8),
          [
            p.target('sum by (blacklist) (max without (%(i)s) (last_over_time(reputation_blacklist_listed{%(q)s, kind=~"$kind"}[%(l)s])))' % v, legend='{{blacklist}}'),
          ],
          {
            description: 'How many assets each blacklist lists, from the asset reports; with backfilled history, months back.',
            fieldConfig: {
              defaults: {
                custom: {
                  lineInterpolation: 'stepAfter',
                  fillOpacity: 10,
                },
                decimals: 0,
                min: 0,
              },
              overrides: [],
            },
          },
        ),
        p.row(10, 'Asset drill-down ($asset)', 28),
        p.panel(
          11,
          'timeseries',
          'Sender Score',
          p.grid(0, 29, 12, 8),
          [
            p.target('max without (%(i)s) (last_over_time(reputation_senderscore{%(q)s, kind=~"$kind", asset=~"$asset"}[%(l)s]))' % v, legend='{{asset}} current'),
            p.target('max without (%(i)s) (last_over_time(reputation_senderscore_previous{%(q)s, kind=~"$kind", asset=~"$asset"}[%(l)s]))' % v, legend='{{asset}} previous'),
          ],
          {
            fieldConfig: {
              defaults: {
                min: 0,
                max: 100,
                custom: {
                  lineInterpolation: 'stepAfter',
                },
              },
              overrides: [],
            },
          },
        ),
        p.panel(
          12,
          'timeseries',
          'Changes at the last check',
          p.grid(12, 29, 12, 8),
          [
            p.target('max without (%(i)s) (reputation_senderscore_change{%(q)s, kind=~"$kind", asset=~"$asset"})' % v, legend='{{asset}} score'),
            p.target('max without (%(i)s) (reputation_blacklistings_change{%(q)s, kind=~"$kind", asset=~"$asset"})' % v, legend='{{asset}} blacklistings'),
          ],
        ),
        p.panel(
          13,
          'timeseries',
          'Blacklistings',
          p.grid(0, 37, 12, 8),
          [
            p.target('max without (%(i)s) (last_over_time(reputation_blacklistings{%(q)s, kind=~"$kind", asset=~"$asset"}[%(l)s]))' % v, legend='{{asset}} count'),
            p.target('max without (%(i)s) (last_over_time(reputation_blacklist_listed{%(q)s, kind=~"$kind", asset=~"$asset"}[%(l)s])) == 1' % v, legend='{{asset}} on {{blacklist}}'),
          ],
          {
            fieldConfig: {
              defaults: {
                custom: {
                  lineInterpolation: 'stepAfter',
                },
              },
              overrides: [],
            },
          },
        ),
        p.panel(
          14,
          'table',
          'Host names',
          p.grid(12, 37, 6, 8),
          [
            p.target('max without (%(i)s) (reputation_asset_hostname_info{%(q)s, kind=~"$kind", asset=~"$asset"})' % v, instant=true, format='table'),
          ],
          {
            transformations: [
              {
                id: 'organize',
                options: {
                  excludeByName: {
                    Time: true,
                    Value: true,
                    job: true,
                    __name__: true,
                  },
                },
              },
            ],
          },
        ),
        p.panel(
          15,
          'table',
          'Tags (asset reports)',
          p.grid(18, 37, 6, 8),
          [
            p.target('max without (%(i)s) (reputation_asset_tag_info{%(q)s, kind=~"$kind", asset=~"$asset"})' % v, instant=true, format='table'),
          ],
          {
            transformations: [
              {
                id: 'organize',
                options: {
                  excludeByName: {
                    Time: true,
                    Value: true,
                    job: true,
                    __name__: true,
                  },
                },
              },
            ],
          },
        ),
        p.row(16, 'Exporter health', 45),
        p.panel(
          17,
          'state-timeline',
          'API up per endpoint',
          p.grid(0, 46, 12, 6),
          [
            p.target('min by (endpoint) (reputation_api_up{%(q)s})' % v, legend='{{endpoint}}'),
          ],
          {
            fieldConfig: {
              defaults: {
                mappings: [
                  {
                    type: 'value',
                    options: {
                      '0': {
                        text: 'down',
                        color: 'red',
                      },
                      '1': {
                        text: 'up',
                        color: 'green',
                      },
                    },
                  },
                ],
              },
              overrides: [],
            },
          },
        ),
        p.panel(
          18,
          'timeseries',
          'API requests by code',
          p.grid(12, 46, 12, 6),
          [
            p.target('sum by (code) (max without (%(s)s) (rate(reputation_api_requests_total{%(q)s}[$__rate_interval])))' % v, legend='{{code}}'),
          ],
          {
            fieldConfig: {
              defaults: {
                unit: 'reqps',
              },
              overrides: [],
            },
          },
        ),
        p.panel(
          19,
          'timeseries',
          'Retries',
          p.grid(0, 52, 8, 6),
          [
            p.target('sum by (endpoint) (max without (%(s)s) (increase(reputation_api_retries_total{%(q)s}[$__rate_interval])))' % v, legend='{{endpoint}}'),
          ],
        ),
        p.panel(
          20,
          'timeseries',
          'Data age',
          p.grid(8, 52, 8, 6),
          [
            p.target('time() - max by (endpoint) (reputation_last_success_timestamp_seconds{%(q)s})' % v, legend='{{endpoint}}'),
          ],
          {
            fieldConfig: {
              defaults: {
                unit: 's',
              },
              overrides: [],
            },
          },
        ),
        p.panel(
          21,
          'timeseries',
          'API latency p90',
          p.grid(16, 52, 8, 6),
          [
            p.target('histogram_quantile(0.9, sum by (endpoint, le) (max without (%(s)s) (rate(reputation_api_request_duration_seconds_bucket{%(q)s}[$__rate_interval]))))' % v, legend='{{endpoint}}'),
          ],
          {
            fieldConfig: {
              defaults: {
                unit: 's',
              },
              overrides: [],
            },
          },
        ),
        p.panel(
          22,
          'stat',
          'Token accepted',
          p.grid(0, 58, 6, 4),
          [
            p.target('min(reputation_api_auth_ok{%(q)s})' % v, instant=true),
          ],
          {
            fieldConfig: {
              defaults: {
                mappings: [
                  {
                    type: 'value',
                    options: {
                      '0': {
                        text: 'rejected',
                        color: 'red',
                      },
                      '1': {
                        text: 'ok',
                        color: 'green',
                      },
                    },
                  },
                ],
              },
              overrides: [],
            },
          },
        ),
        p.panel(
          23,
          'stat',
          'Unrecognized values (1h)',
          p.grid(6, 58, 6, 4),
          [
            p.target('sum(max without (%(s)s) (increase(reputation_unrecognized_values_total{%(q)s}[1h]))) or vector(0)' % v, instant=true),
          ],
        ),
        p.panel(
          24,
          'stat',
          'Exporter memory',
          p.grid(12, 58, 6, 4),
          [
            p.target('max(process_resident_memory_bytes{%(q)s})' % v, instant=true),
          ],
          {
            fieldConfig: {
              defaults: {
                unit: 'bytes',
              },
              overrides: [],
            },
          },
        ),
        p.panel(
          25,
          'table',
          'Exporter versions',
          p.grid(18, 58, 6, 4),
          [
            p.target('max without (%(s)s) (reputation_exporter_build_info{%(q)s})' % v, instant=true, format='table'),
          ],
          {
            transformations: [
              {
                id: 'organize',
                options: {
                  excludeByName: {
                    Time: true,
                    Value: true,
                    __name__: true,
                  },
                },
              },
            ],
          },
        ),
      ],
    },
  },
}
