// Recording rules (level:metric:operations): the fleet in a few hundred series, computed where
// the per-asset series are (the one Prometheus, or each server of a hashmod fleet on its
// shards), so that the dashboard's first screen and a global view read these and never every
// asset. Each result keeps job, the account and the shard (`shard`, absent without
// metrics.shards): a server's results are its shards' own, and a global view adds them up
// without two servers writing the same series. Replicas are counted once.
{
  local c = $._config,
  local kept(labels='') = 'job, %s, %s%s' % [c.accountLabel, c.shardLabel, if labels == '' then '' else ', ' + labels],
  // One value of a per-asset series, however many replicas serve it.
  local one(metric, matchers='') =
    'max without (%s) (%s{%s%s})' % [c.replicaLabel, metric, c.selector, if matchers == '' then '' else ', ' + matchers],
  local asset = kept('kind, asset'),
  local lists = 'endpoint=~"ip-list|domain-list"',

  prometheusRules+:: {
    groups+: [
      {
        name: 'reputation.rules',
        interval: c.rulesInterval,
        rules: [
          // Assets per kind.
          {
            record: 'account_kind:reputation_assets:count',
            expr: 'count by (%s) (%s)' % [kept('kind'), one('reputation_asset_info')],
          },
          // Assets on at least one blacklist, per kind: 0, not nothing, when none is (nothing
          // is a gap, which the alerts bridge).
          {
            record: 'account_kind:reputation_blacklisted_assets:count',
            expr: 'count by (%(by)s) (%(x)s > 0) or 0 * count by (%(by)s) (%(x)s)' % { by: kept('kind'), x: one('reputation_blacklistings') },
          },
          // Assets Microsoft SNDS reports blocked, per kind; likewise.
          {
            record: 'account_kind:reputation_snds_blocked_assets:count',
            expr: 'count by (%(by)s) (%(x)s == 1) or 0 * count by (%(by)s) (%(x)s)' % { by: kept('kind'), x: one('reputation_snds_blocked') },
          },
          // Assets per SNDS colour and kind (the colour in `reputation_snds_reputation`).
          {
            record: 'account_kind:reputation_snds_reputation:count',
            expr: 'count by (%s) (%s == 1)' % [kept('kind, reputation_snds_reputation'), one('reputation_snds_reputation')],
          },
          // Assets with a Sender Score below the floor, per kind (0 when none): the count of
          // ReputationSenderScoreLowAssets.
          {
            record: 'account_kind:reputation_senderscore_low_assets:count',
            expr: 'count by (%(by)s) (%(x)s < %(floor)d) or 0 * count by (%(by)s) (%(x)s)' % { by: kept('kind'), x: one('reputation_senderscore'), floor: c.senderScoreFloor },
          },
          // Worst (lowest) Sender Score per kind.
          {
            record: 'account_kind:reputation_senderscore:min',
            expr: 'min by (%s) (%s)' % [kept('kind'), one('reputation_senderscore')],
          },
          // Assets listed per blacklist (asset reports).
          {
            record: 'account_blacklist:reputation_blacklist_listed:sum',
            expr: 'sum by (%s) (%s)' % [kept('blacklist'), one('reputation_blacklist_listed')],
          },
          // The worst Sender Scores, at most worstKept per kind: the assets the dashboard
          // lists first.
          {
            record: 'asset:reputation_senderscore:bottomk',
            expr: 'bottomk by (%s) (%d, %s)' % [kept('kind'), c.worstKept, one('reputation_senderscore')],
          },
          // Assets Microsoft SNDS rates red, at most worstKept per kind: the ones
          // ReputationSndsRedAssets names.
          {
            record: 'asset:reputation_snds_red:topk',
            expr: 'topk by (%s) (%d, %s == 1)' % [kept('kind'), c.worstKept, one('reputation_snds_reputation', 'reputation_snds_reputation="red"')],
          },
          // The assets on the most blacklists, at most worstKept per kind (none when none is
          // listed).
          {
            record: 'asset:reputation_blacklistings:topk',
            expr: 'topk by (%s) (%d, %s > 0)' % [kept('kind'), c.worstKept, one('reputation_blacklistings')],
          },
        ],
      },
      // What changed lately, at most changesKept of each per account: the dashboard's tables of
      // events, each row linking its asset.
      {
        name: 'reputation.changes',
        interval: c.rulesInterval,
        rules: [
          // Listings begun within changesWindow, by when they began (asset reports).
          {
            record: 'asset_blacklist:reputation_blacklist_listed:since',
            expr: 'topk by (%s) (%d, %s > time() - %d)' % [kept(), c.changesKept, one('reputation_blacklist_listed_since_timestamp_seconds'), c.changesWindowSeconds],
          },
          // Sender Scores that fell by senderScoreDrop points or more at the API's last check.
          {
            record: 'asset:reputation_senderscore_change:drop',
            expr: 'bottomk by (%s) (%d, %s <= -%d)' % [kept(), c.changesKept, one('reputation_senderscore_change'), c.senderScoreDrop],
          },
          // Assets SNDS reports newly blocked at the API's last check.
          {
            record: 'asset:reputation_snds_blocked:new',
            expr: 'topk by (%s) (%d, %s > 0)' % [kept(), c.changesKept, one('reputation_snds_blocked_change')],
          },
        ],
      },
    ],
  },
}
