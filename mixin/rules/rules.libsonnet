// Recording rules (level:metric:operations).
{
  local c = $._config,
  // Replicas and slices of one account serve the same series: counted once.
  local servers = '%(replicaLabel)s, %(shardLabel)s' % c,

  prometheusRules+:: {
    groups+: [
      {
        name: 'reputation.rules',
        rules: [
          // Worst (lowest) Sender Score per kind of asset.
          {
            record: 'kind:reputation_senderscore:min',
            expr: 'min by (kind) (reputation_senderscore{%(selector)s})' % c,
          },
          // Assets listed per blacklist (needs asset reports). With two replicas, each pair of
          // series is counted once.
          {
            record: 'blacklist:reputation_blacklist_listed:sum',
            expr: 'sum by (blacklist) (max without (%s) (reputation_blacklist_listed{%s}))' % [servers, c.selector],
          },
          // Share of the assets with SNDS data whose colour is green, per kind (0 to 1).
          {
            local green = 'max without (%s) (reputation_snds_reputation{%s, reputation_snds_reputation="green"})' % [servers, c.selector],
            record: 'kind:reputation_snds_reputation_green:ratio',
            expr: 'sum by (kind) (%s)\n  /\ncount by (kind) (%s)\n' % [green, green],
          },
        ],
      },
    ],
  },
}
