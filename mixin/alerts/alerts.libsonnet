// The alerts. Each links its heading of the runbook; thresholds and durations come from
// _config (config.libsonnet).
{
  local c = $._config,
  local runbook(name) = '%s#%s' % [c.runbookUrl, std.asciiLower(name)],
  // An alert of this mixin: its name, severity and runbook link set in one way.
  local alert(name, severity, expr, summary, description, extra={}) = {
    alert: name,
    expr: expr,
    labels: { severity: severity },
    annotations: {
      summary: summary,
      description: description,
      runbook_url: runbook(name),
    },
  } + extra,
  local holding(pending, keep) = { 'for': pending, keep_firing_for: keep },

  prometheusAlerts+:: {
    groups+: [
      {
        name: 'reputation.alerts',
        rules: [
          // -1 / null scores give no sample, so they never fire this.
          alert(
            'ReputationSenderScoreLow',
            'warning',
            'reputation_senderscore{%(selector)s} < %(senderScoreFloor)s' % c,
            'Sender Score is low.',
            'The Sender Score of {{ $labels.kind }} {{ $labels.asset }} is {{ $value }}, below %(senderScoreFloor)s. Mail from it is likely to be filtered.' % c,
            holding(c.senderScoreLowFor, c.keepFiringFor),
          ),
          alert(
            'ReputationSenderScoreDropped',
            'warning',
            'max_over_time(reputation_senderscore{%(selector)s}[%(senderScoreDropWindow)s]) - reputation_senderscore{%(selector)s} >= %(senderScoreDrop)s' % c,
            'Sender Score dropped sharply.',
            'The Sender Score of {{ $labels.kind }} {{ $labels.asset }} is {{ $value }} points below its highest value of the last %(senderScoreDropWindow)s.' % c,
            holding(c.senderScoreDropFor, c.keepFiringFor),
          ),
          // Fires when the count rose within the window (a new listing), not for old listings.
          alert(
            'ReputationAssetBlacklisted',
            'critical',
            'reputation_blacklistings{%(selector)s} > 0 and reputation_blacklistings{%(selector)s} > min_over_time(reputation_blacklistings{%(selector)s}[%(listingWindow)s])' % c,
            'Asset newly blacklisted.',
            '{{ $labels.kind }} {{ $labels.asset }} is now listed on {{ $value }} blacklist(s), more than in the last %(listingWindow)s. See reputation_blacklist_listed for which ones.' % c,
            { keep_firing_for: c.listingKeepFiringFor },
          ),
          // Needs asset reports (asset_reports.enabled); names the blacklist.
          alert(
            'ReputationBlacklistListed',
            'critical',
            'reputation_blacklist_listed{%(selector)s} == 1' % c,
            'Asset listed on a blacklist.',
            '{{ $labels.kind }} {{ $labels.asset }} is listed on {{ $labels.blacklist }}.',
            { keep_firing_for: c.listingKeepFiringFor },
          ),
          alert(
            'ReputationSndsRed',
            'warning',
            'reputation_snds_reputation{%(selector)s, reputation_snds_reputation="red"} == 1' % c,
            'Microsoft SNDS reputation is red.',
            'Microsoft SNDS rates {{ $labels.kind }} {{ $labels.asset }} red: Outlook.com filters most of its mail.',
            holding(c.sndsRedFor, c.keepFiringFor),
          ),
          alert(
            'ReputationSndsBlocked',
            'critical',
            'reputation_snds_blocked{%(selector)s} == 1' % c,
            'Microsoft SNDS reports the asset blocked.',
            'Microsoft SNDS reports {{ $labels.kind }} {{ $labels.asset }} as blocked: Outlook.com rejects its mail.',
            holding(c.sndsBlockedFor, c.keepFiringFor),
          ),
          // An endpoint has no reputation_api_up before its first outcome, so a restart never
          // makes this pending; for asset it is 0 after 5 failed reports in a row.
          alert(
            'ReputationApiDown',
            'warning',
            'reputation_api_up{%(selector)s} == 0' % c,
            'The reputation API keeps failing.',
            'Polls of the API endpoint {{ $labels.endpoint }} by {{ $labels.%(instanceLabel)s }} have failed for %(apiDownFor)s; the exported values are ageing.' % c,
            { 'for': c.apiDownFor },
          ),
          alert(
            'ReputationApiUnavailable',
            'warning',
            'sum by (job, %(instanceLabel)s, endpoint) (increase(reputation_api_requests_total{%(selector)s, code="503"}[%(api503Window)s])) >= %(api503Count)s' % c,
            'The reputation API keeps answering 503.',
            'The API endpoint {{ $labels.endpoint }} answered 503 to {{ $labels.%(instanceLabel)s }} %(api503Count)s times or more in the last %(api503Window)s; the exporter backs off and keeps the last values.' % c,
          ),
          alert(
            'ReputationApiTokenRejected',
            'critical',
            'reputation_api_auth_ok{%(selector)s} == 0' % c,
            "The reputation API rejects the exporter's token.",
            'The API answers 401/403 to {{ $labels.%(instanceLabel)s }}: the token is wrong, expired or lacks access. No new data arrives.' % c,
            { 'for': c.tokenRejectedFor },
          ),
          alert(
            'ReputationDataStale',
            'warning',
            'time() - reputation_last_success_timestamp_seconds{%(selector)s, endpoint=~"ip-list|domain-list"} > %(staleAfterSeconds)s' % c,
            'Reputation data is stale.',
            'The last successful poll of {{ $labels.endpoint }} by {{ $labels.%(instanceLabel)s }} was {{ $value | humanizeDuration }} ago; after metrics.max_age its asset series disappear.' % c,
            { 'for': c.staleFor },
          ),
          alert(
            'ReputationExporterDown',
            'critical',
            'up{%(selector)s} == 0' % c,
            'The reputation exporter cannot be scraped.',
            'Prometheus cannot scrape {{ $labels.%(instanceLabel)s }}: no reputation data and no reputation alerts from it.' % c,
            { 'for': c.exporterDownFor },
          ),
          alert(
            'ReputationExporterReloadFailed',
            'warning',
            'reputation_exporter_config_last_reload_successful{%(exporterSelector)s} == 0' % c,
            'The exporter refused its new configuration.',
            '{{ $labels.%(instanceLabel)s }} refused the configuration it was asked to reload (SIGHUP or POST /-/reload) and runs the previous one; the next restart would fail the same way.' % c,
            { 'for': c.reloadFailedFor },
          ),
        ],
      },
    ],
  },
}
