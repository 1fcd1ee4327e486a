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
    // One copy of the process' own series per exporter, however many shards serve it.
    s: c.shardLabel,
    l: c.trendLookback,
  },

  // The fleet's tables' window, as people say it.
  local changes = if c.changesWindowSeconds % 3600 == 0 then '%d h' % (c.changesWindowSeconds / 3600) else '%d s' % c.changesWindowSeconds,
  // A link from an asset in a table to this dashboard's asset view, the asset picked.
  local assetLink = {
    title: 'Open the asset view',
    url: '/d/${__dashboard.uid}?${__url_time_range}&${job:queryparam}&${account:queryparam}&var-kind=${__data.fields.kind}&var-search=${__value.raw}&var-asset=${__value.raw}',
  },
  // A bounded table of assets (a recording rule's few rows), each asset linking its view.
  local assetTable(id, title, grid, expr, value, description, defaults={}) = p.panel(
    id,
    'table',
    title,
    grid,
    [p.target(expr, instant=true, format='table')],
    {
      description: description,
      transformations: [
        {
          id: 'organize',
          options: {
            excludeByName: {
              Time: true,
              __name__: true,
              job: true,
              [c.shardLabel]: true,
            },
            renameByName: {
              Value: value,
            },
          },
        },
      ],
      fieldConfig: {
        defaults: defaults,
        overrides: [
          {
            matcher: { id: 'byName', options: value },
            properties: [{ id: 'unit', value: std.get(defaults, 'unit', 'none') }] + (
              // Coloured by the thresholds, where the table has them (the asset and kind
              // columns keep the text colour).
              if std.objectHas(defaults, 'thresholds') then [{ id: 'custom.cellOptions', value: { type: 'color-text' } }] else []
            ),
          },
          {
            matcher: { id: 'byName', options: 'asset' },
            properties: [{ id: 'links', value: [assetLink] }],
          },
        ],
      },
    },
  ),

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
          // Every variable but the asset reads the recording rules: a few values, however
          // large the fleet.
          p.variable('job', 'Job', 'label_values(account_kind:reputation_assets:count{%s}, job)' % c.selector),
          p.variable(
            'account',
            'Account (%s)' % c.accountLabel,
            'label_values(account_kind:reputation_assets:count{job=~"$job"}, %s)' % c.accountLabel,
          ),
          p.variable('kind', 'Kind', 'label_values(account_kind:reputation_assets:count{%s}, kind)' % v.q),
          {
            name: 'search',
            label: 'Asset search (regular expression)',
            type: 'textbox',
            query: '',
            current: { text: '', value: '' },
            hide: 0,
            description: 'A regular expression for the whole asset name (192\\.0\\.2\\..* or .*example.*): the asset picker then lists the %d worst assets it matches. Empty, the picker lists the worst assets of the fleet from the recording rules.' % c.assetPickerMax,
          },
          // The asset view's picker: never every asset, and never a look at every asset's
          // series while the search is empty. No series has the label `picker_search`, so a
          // matcher on it tests the search text alone: `picker_search=~"${search}"` keeps the
          // recording rules' worst assets while the search is empty, `picker_search!~"${search}"`
          // keeps the per-asset series matching the search once there is one. Put first, it
          // lets Prometheus skip the index look-up of the branch that does not apply.
          {
            local empty = 'picker_search=~"${search}", %s, kind=~"$kind"' % v.q,
            local searched = 'picker_search!~"${search}", %s, kind=~"$kind", asset=~"${search}"' % v.q,
            local one(metric) = 'max without (%s, %s) (%s{%s})' % [c.replicaLabel, c.shardLabel, metric, searched],
            // Most blacklistings first, then the lowest score; on one line, as Grafana reads
            // query_result().
            local worst = 'topk(%(max)d, max by (kind, asset) (%(rules)s or %(matching)s))' % {
              max: c.assetPickerMax,
              rules: '1000 * asset:reputation_blacklistings:topk{%(e)s} or 100 - asset:reputation_senderscore:bottomk{%(e)s}' % { e: empty },
              matching: '1000 * %(l)s + 100 - %(s)s or 1000 * %(l)s' % { l: one('reputation_blacklistings'), s: one('reputation_senderscore') },
            },
            name: 'asset',
            label: 'Asset',
            type: 'query',
            datasource: p.datasource,
            query: { query: 'query_result(%s)' % worst, refId: 'asset-var' },
            definition: 'query_result(%s)' % worst,
            regex: '/asset="([^"]+)"/',
            refresh: 2,
            includeAll: false,
            multi: true,
            sort: 0,
            description: 'The worst assets (most blacklistings, then the lowest Sender Score): of the fleet while the search is empty, else the %d worst the search matches. A table above opens an asset here.' % c.assetPickerMax,
          },
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
            p.target('sum by (kind) (account_kind:reputation_assets:count{%(q)s, kind=~"$kind"})' % v, legend='{{kind}}', instant=true),
          ],
        ),
        p.panel(
          3,
          'stat',
          'Assets on a blacklist',
          p.grid(4, 1, 4, 4),
          [
            p.target('sum(account_kind:reputation_blacklisted_assets:count{%(q)s, kind=~"$kind"}) or vector(0)' % v, instant=true),
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
            p.target('min(account_kind:reputation_senderscore:min{%(q)s, kind=~"$kind"})' % v, instant=true),
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
          p.grid(12, 1, 3, 4),
          [
            p.target('sum(account_kind:reputation_snds_reputation:count{%(q)s, kind=~"$kind", reputation_snds_reputation="green"}) / sum(account_kind:reputation_snds_reputation:count{%(q)s, kind=~"$kind"})' % v, instant=true),
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
          27,
          'stat',
          'SNDS blocked',
          p.grid(15, 1, 3, 4),
          [
            p.target('sum(account_kind:reputation_snds_blocked_assets:count{%(q)s, kind=~"$kind"}) or vector(0)' % v, instant=true),
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
          28,
          'bargauge',
          'SNDS colours',
          p.grid(18, 1, 3, 4),
          [
            p.target('sum by (reputation_snds_reputation) (account_kind:reputation_snds_reputation:count{%(q)s, kind=~"$kind"})' % v, legend='{{reputation_snds_reputation}}', instant=true),
          ],
          {
            options: {
              orientation: 'horizontal',
              displayMode: 'basic',
            },
          },
        ),
        // Shards of metrics.shards that no server has scraped in the last shardsSeenWindow (a
        // dead server of the fleet, or its remote write): their assets are missing from every
        // count above (ReputationShardsMissing pages). The most of any replica.
        p.panel(
          32,
          'stat',
          'Shards missing',
          p.grid(21, 1, 3, 4),
          [
            p.target('max(max by (%(i)s) (max_over_time(reputation_exporter_shards{%(q)s}[%(w)s])) - count by (%(i)s) (count_over_time(reputation_exporter_shards{%(q)s}[%(w)s]))) or vector(0)' % (v { w: c.shardsSeenWindow }), instant=true),
          ],
          {
            description: 'Shards of the exporter (metrics.shards) that no Prometheus server of the fleet scraped in the last %s: a dead server or remote write. Their assets are missing from the counts of this view.' % c.shardsSeenWindow,
            fieldConfig: {
              defaults: {
                thresholds: p.thresholds([['green', null], ['red', 1]]),
              },
              overrides: [],
            },
          },
        ),
        assetTable(
          6,
          'Worst Sender Scores',
          p.grid(0, 5, 8, 9),
          'bottomk(%d, asset:reputation_senderscore:bottomk{%s, kind=~"$kind"})' % [c.worstKept, v.q],
          'score',
          'The %d lowest Sender Scores (recording rule asset:reputation_senderscore:bottomk); an asset opens it below.' % c.worstKept,
          { thresholds: p.thresholds([['red', null], ['orange', c.senderScoreFloor], ['green', c.senderScoreGood]]), color: { mode: 'thresholds' } },
        ),
        p.panel(
          7,
          'bargauge',
          'Assets listed per blacklist (asset reports)',
          p.grid(8, 5, 8, 9),
          [
            p.target('sum by (blacklist) (account_blacklist:reputation_blacklist_listed:sum{%(q)s})' % v, legend='{{blacklist}}', instant=true),
          ],
          {
            options: {
              orientation: 'horizontal',
              displayMode: 'basic',
            },
          },
        ),
        assetTable(
          8,
          'New listings (%s)' % changes,
          p.grid(16, 5, 8, 9),
          'topk(%d, asset_blacklist:reputation_blacklist_listed:since{%s, kind=~"$kind"})' % [c.changesKept, v.q],
          'listed since',
          'Listings begun in the last %s, newest first (asset reports; recording rule asset_blacklist:reputation_blacklist_listed:since).' % changes,
          { unit: 'dateTimeAsIso' },
        ),
        assetTable(
          31,
          'Most blacklisted assets',
          p.grid(0, 14, 8, 7),
          'topk(%d, asset:reputation_blacklistings:topk{%s, kind=~"$kind"})' % [c.worstKept, v.q],
          'blacklists',
          'The %d assets on the most blacklists (recording rule asset:reputation_blacklistings:topk); an asset opens it below.' % c.worstKept,
        ),
        assetTable(
          29,
          'Sender Score drops at the last check',
          p.grid(8, 14, 8, 7),
          'bottomk(%d, asset:reputation_senderscore_change:drop{%s, kind=~"$kind"})' % [c.changesKept, v.q],
          'change',
          "Scores that fell by %d points or more at the API's last check (recording rule asset:reputation_senderscore_change:drop)." % c.senderScoreDrop,
        ),
        assetTable(
          30,
          'SNDS blocks at the last check',
          p.grid(16, 14, 8, 7),
          'topk(%d, asset:reputation_snds_blocked:new{%s, kind=~"$kind"})' % [c.changesKept, v.q],
          'blocked',
          "Assets Microsoft SNDS reports newly blocked at the API's last check (recording rule asset:reputation_snds_blocked:new).",
        ),
        p.panel(
          26,
          'timeseries',
          'Assets listed per blacklist over time (asset reports)',
          p.grid(0, 21, 24, 7),
          [
            p.target('sum by (blacklist) (account_blacklist:reputation_blacklist_listed:sum{%(q)s})' % v, legend='{{blacklist}}'),
          ],
          {
            description: 'How many assets each blacklist lists, from the recording rule account_blacklist:reputation_blacklist_listed:sum: since the rules were loaded (the asset view shows backfilled history).',
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
        p.panel(
          9,
          'state-timeline',
          'SNDS colour',
          p.grid(0, 45, 24, 5),
          [
            p.target('2 * sum by (kind, asset) (last_over_time(reputation_snds_reputation{%(q)s, kind=~"$kind", asset=~"$asset", reputation_snds_reputation="green"}[%(l)s])) + sum by (kind, asset) (last_over_time(reputation_snds_reputation{%(q)s, kind=~"$kind", asset=~"$asset", reputation_snds_reputation="yellow"}[%(l)s]))' % v, legend='{{asset}}'),
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
        p.row(16, 'Exporter health', 50),
        p.panel(
          17,
          'state-timeline',
          'API up per endpoint',
          p.grid(0, 51, 12, 6),
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
          p.grid(12, 51, 12, 6),
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
          p.grid(0, 57, 8, 6),
          [
            p.target('sum by (endpoint) (max without (%(s)s) (increase(reputation_api_retries_total{%(q)s}[$__rate_interval])))' % v, legend='{{endpoint}}'),
          ],
        ),
        p.panel(
          20,
          'timeseries',
          'Data age',
          p.grid(8, 57, 8, 6),
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
          p.grid(16, 57, 8, 6),
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
          p.grid(0, 63, 6, 4),
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
          p.grid(6, 63, 6, 4),
          [
            p.target('sum(max without (%(s)s) (increase(reputation_unrecognized_values_total{%(q)s}[1h]))) or vector(0)' % v, instant=true),
          ],
        ),
        p.panel(
          24,
          'stat',
          'Exporter memory',
          p.grid(12, 63, 6, 4),
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
          p.grid(18, 63, 6, 4),
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
