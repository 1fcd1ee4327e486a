// Recording rules (level:metric:operations).
{
  local c = $._config,

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
            expr: 'sum by (blacklist) (max without (%(instanceLabel)s) (reputation_blacklist_listed{%(selector)s}))' % c,
          },
          // Share of the assets with SNDS data whose colour is green, per kind (0 to 1).
          {
            local green = 'max without (%(instanceLabel)s) (reputation_snds_reputation{%(selector)s, reputation_snds_reputation="green"})' % c,
            record: 'kind:reputation_snds_reputation_green:ratio',
            expr: 'sum by (kind) (%s)\n  /\ncount by (kind) (%s)\n' % [green, green],
          },
        ],
      },
    ],
  },
}
