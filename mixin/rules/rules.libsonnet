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
  // A Prometheus duration of one unit ('2m', '1h', '30s') in seconds.
  local seconds(d) =
    local n = std.parseInt(std.substr(d, 0, std.length(d) - 1));
    n * { s: 1, m: 60, h: 3600 }[d[std.length(d) - 1]],
  // A recorded series of this group, as the alerts and the group itself read it.
  local rec(name) = '%s{%s}' % [name, c.selector],
  // `expr` (per-asset series of the replicas) kept for the replicas whose lists are current.
  local current(expr) = '(%s) and on (job, %s, %s) %s' % [expr, c.accountLabel, c.replicaLabel, rec('replica:reputation_last_success_timestamp_seconds:current')],
  // The number of current replicas whose per-asset series meet `condition`, recorded as
  // asset:<metric>:seen (so that the rules below read the per-asset series once for it).
  local seen(metric, condition) = {
    record: 'asset:%s:seen' % metric,
    expr: 'count without (%s) (%s)' % [c.replicaLabel, current(condition)],
  },
  // The assets where every current replica meets what `seen(metric, ...)` counts (the one
  // that reports on the asset among them). A replica that has not polled yet counts against
  // a new page (it may see otherwise in a moment) but not against `paging`, open a minute
  // ago: it has no data to say the event is over.
  // `seen` is that count where another rule of the group already has the replicas' series.
  local everySees(metric, paging, seen=rec('asset:%s:seen' % metric)) =
    '(%(seen)s >= on (job, %(a)s) group_left count by (job, %(a)s) (%(current)s)\nor %(seen)s >= on (job, %(a)s) group_left count by (job, %(a)s) (%(current)s and on (job, %(a)s, %(r)s) %(last)s) and on (%(asset)s) %(paging)s offset 1m)' % {
      seen: seen,
      a: c.accountLabel,
      r: c.replicaLabel,
      asset: asset,
      current: rec('replica:reputation_last_success_timestamp_seconds:current'),
      last: 'reputation_last_success_timestamp_seconds{%s, %s}' % [c.selector, lists],
      paging: rec(paging),
    },
  // `condition` on a per-asset series, aggregated with `aggregation` over the current
  // replicas, where every one sees it (everySees).
  local everyCurrent(metric, condition, aggregation, paging) =
    '%s without (%s) (%s)\nand on (%s) %s' % [aggregation, c.replicaLabel, current(condition), asset, everySees(metric, paging)],
  // The assets a current replica has the report of, one that has caught up with its list
  // (recorded in reputation.pages).
  local reported = rec('asset:reputation_blacklistings_named:reported'),
  // The assets every current replica's list says are on no blacklist: what a held report
  // said is over, whichever replica reports on them.
  local unlisted = 'max without (%s) (%s) == 0' % [c.replicaLabel, current('reputation_blacklistings{%s}' % c.selector)],
  // What a page needs, held while the exporter cannot say: `live`, what the data says now, or
  // the last minute's result where no current replica serves the account's data of that kind
  // (every replica down or restarting, an API outage past metrics.max_age, a scrape missed,
  // only a replica cut off from the API left).
  local held(name, live) =
    '%s\nor\n(%s offset 1m unless on (job, %s, kind) max without (%s, %s) (%s) > 0)'
    % [live, rec(name), c.accountLabel, c.replicaLabel, c.shardLabel, current('reputation_assets{%s}' % c.selector)],

  // The changes at the API's last check that page: a score drop, a new SNDS block, a rise
  // of the list's count.
  local drop = 'reputation_senderscore_change{%s} <= -%d' % [c.selector, c.senderScoreDrop],
  local block = 'reputation_snds_blocked_change{%s} > 0' % c.selector,
  // The same changes at API checks no list showed (reputation_*_missed_change: the next check
  // overwrote them before any poll, in an API outage or while every replica restarted), taken
  // for an event where no replica had polled for missedBlindSeconds in the last missedWindow:
  // a replica back from its own outage while another polled on missed nothing the other did
  // not see. Aggregated as the change (the mildest of the current replicas that serve one).
  // Not from a replica whose earliest list in the window is older than the newest list of
  // the current replicas when a page of the same change on the asset began (`paged`, kept
  // missedPagedSeconds), unless that page stood a minute ago (the missed change only holds
  // it open, and a replica's own missed change does not end the page it began): one cut off
  // from the API long before, back as an outage ends, or one that polled last before
  // another's last poll of the outage, compares an older list with the new and would page
  // again the change the other saw and paged. A replica whose list is as new as any that
  // paged missed what no page showed, and pages it whether or not the others are back.
  local missed(metric, condition, aggregation, paging) =
    local previous = 'min without (endpoint, %s) (min_over_time(reputation_last_success_timestamp_seconds{%s, %s}[%s]))' % [c.shardLabel, c.selector, lists, c.missedWindow];
    '%(agg)s without (%(r)s) (%(current)s\nunless on (%(asset)s, %(r)s) (%(metric)s * 0 + on (job, %(a)s, %(r)s) group_left %(previous)s < on (%(asset)s) group_left () (%(paged)s unless on (%(asset)s) %(paging)s offset 1m)))\nand on (job, %(a)s) max_over_time(%(age)s[%(window)s]) > %(blind)d' % {
      agg: aggregation,
      r: c.replicaLabel,
      a: c.accountLabel,
      asset: asset,
      metric: '%s{%s}' % [metric, c.selector],
      current: current('%s{%s} %s' % [metric, c.selector, condition]),
      previous: previous,
      paged: rec(pagedAtOf(paging)),
      paging: rec(paging),
      age: rec('account:reputation_last_success_age_seconds:max'),
      window: c.missedWindow,
      blind: c.missedBlindSeconds,
    },
  // When a page of `paging` began, the newest list of the current replicas then (read by
  // `missed`): remembered for missedPagedSeconds.
  local pagedAtOf(paging) = std.strReplace(paging, ':paging', ':paged_at'),
  local pagedAt(paging) = {
    record: pagedAtOf(paging),
    expr: '(%(paging)s unless on (%(asset)s) %(paging)s offset 1m) * 0 + on (job, %(a)s) group_left max by (job, %(a)s) (%(current)s)\nor\n%(own)s offset 1m > time() - %(keep)d' % {
      paging: rec(paging),
      asset: asset,
      a: c.accountLabel,
      current: rec('replica:reputation_last_success_timestamp_seconds:current'),
      own: rec(pagedAtOf(paging)),
      keep: c.missedPagedSeconds,
    },
  },
  local rise = 'reputation_blacklistings_change{%s} > 0' % c.selector,
  // How many blacklists a rise added: the most any current replica saw.
  local riseMax = 'max without (%s) (%s)' % [c.replicaLabel, rec('replica_asset:reputation_blacklistings_change:current')],
  // When the rise was checked, by the newest report of the current replicas that see it
  // (reputation_blacklistings_rise_timestamp_seconds): the date and the rise come from the
  // same replicas, not a date of one that polled a later check with the change of another
  // that has not yet.
  local riseReplicas = 'and on (%(asset)s, %(r)s) (%(cur)s == on (%(asset)s) group_left %(max)s)' % {
    r: c.replicaLabel,
    asset: asset,
    cur: rec('replica_asset:reputation_blacklistings_change:current'),
    max: riseMax,
  },
  local riseDate = 'max without (%s) (reputation_blacklistings_rise_timestamp_seconds{%s} %s)' % [c.replicaLabel, c.selector, riseReplicas],
  // How many listings the rise is net of, by the same reports (reputation_blacklistings_rise_ended:
  // listings the check before counted that ended by the rise's): as many more began. 0 where
  // no current report dates the rise.
  local riseEnded = '(max without (%s) (reputation_blacklistings_rise_ended{%s} %s) or on (%s) %s * 0)' % [c.replicaLabel, c.selector, riseReplicas, asset, riseMax],
  // The latest a listing of the rise can have begun: the rise's date (riseDate) where it falls
  // after the newest list a current replica served the minute before the rules first saw the
  // rise (the bound of asset:reputation_blacklistings_change:after, an API check interval
  // on): then it is the check that counted the rise, made between those two polls. Else
  // when the rules first saw the rise (first_seen): a date outside that window is a sample's
  // (a count history of daily entries), not the check's, and after an outage or a restart of
  // every replica there is no such list to tell.
  local riseLatest = '(%(date)s > on (%(asset)s) %(after)s + %(check)d or %(seen)s)' % {
    date: riseDate,
    asset: asset,
    after: rec('asset:reputation_blacklistings_change:after'),
    check: c.apiCheckSeconds,
    seen: rec('asset:reputation_blacklistings_change:first_seen'),
  },
  // The listings the pages hold that explain a rise: begun since the API check before it,
  // where a current report dates it (riseDate); else in the two API check intervals before
  // the list's poll (until the report that follows the list dates it, and not for a rise
  // whose page already stands: replicas back from a cold start serve no date until their
  // reports come), and after the bound the rules had when they first saw the rise
  // (asset:reputation_blacklistings_change:after). Not one begun after the latest the rise's
  // listings can have begun (riseLatest).
  local explaining =
    local since = rec('asset_blacklist:reputation_blacklist_listed_since:new');
    '(%(since)s > on (%(asset)s) group_left %(date)s - %(check)d\nor\n(%(since)s > on (job, %(a)s) group_left max by (job, %(a)s) (%(current)s) - %(checks)d\nunless on (%(asset)s) %(date)s\nunless on (%(asset)s) %(unnamed)s offset 1m\nunless on (%(asset)s, blacklist) (%(since)s <= on (%(asset)s) group_left %(after)s)))\n<= on (%(asset)s) group_left () %(seen)s' % {
      since: since,
      asset: asset,
      date: riseDate,
      check: c.apiCheckSeconds,
      a: c.accountLabel,
      current: rec('replica:reputation_last_success_timestamp_seconds:current'),
      checks: 2 * c.apiCheckSeconds,
      unnamed: rec('asset:reputation_blacklistings_change:unnamed'),
      after: rec('asset:reputation_blacklistings_change:after'),
      seen: riseLatest,
    },

  // `value` taken as the count's page begins, and remembered while paged_since is unchanged.
  local withPage(record, value) =
    local since = rec('asset:reputation_blacklistings_change:paged_since');
    '%(value)s and on (%(asset)s) %(paging)s == time()\nor\n%(own)s offset 1m and on (%(asset)s) (%(since)s == %(since)s offset 1m)' % {
      value: value,
      asset: asset,
      paging: rec('asset:reputation_blacklistings_change:paging_since'),
      own: rec(record),
      since: since,
    },

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
      // What each page of an event is about, evaluated at the global evaluation interval (1m)
      // for the alerts of reputation.alerts: the live conditions of the fresh replicas, held
      // through what makes the data go missing, so that a restart, a rollout or an outage
      // neither closes a page nor opens it again, and a replica that cannot reach the API does
      // not keep one open or hold one back (docs/runbook.md, "What pages").
      {
        name: 'reputation.pages',
        rules: [
          // The current replicas: those whose lists are no more than currentSlackSeconds old
          // (a replica cut off from the API drops out at its first missed poll, whatever the
          // others do; in an API outage none is current, and the pages are held) and that
          // still serve assets (not past metrics.max_age), and those that started (or were
          // first scraped) within that time and have not polled yet: a new page waits for
          // their first poll, though one open goes on without them (everyCurrent). The pages read
          // these alone: a replica that cannot reach the API while another can serves old news.
          {
            record: 'replica:reputation_last_success_timestamp_seconds:current',
            local last = 'min without (endpoint, %s) (reputation_last_success_timestamp_seconds{%s, %s})' % [c.shardLabel, c.selector, lists],
            local up = 'up{%s}' % c.selector,
            expr: '%(last)s > time() - %(slack)d\nand on (job, %(a)s, %(r)s) max without (kind, %(s)s) (reputation_assets{%(sel)s}) > 0\nor\n(min without (%(s)s) (%(up)s) == 1 unless on (job, %(a)s, %(r)s) %(last)s)\nand on (job, %(a)s, %(r)s) (min without (%(s)s) (min_over_time(%(up)s[%(slack)ds])) == 0 or min without (%(s)s) (%(up)s unless %(up)s offset %(slack)ds))' % {
              last: last,
              up: up,
              a: c.accountLabel,
              r: c.replicaLabel,
              s: c.shardLabel,
              slack: c.currentSlackSeconds,
              sel: c.selector,
            },
          },
          // The assets a current replica has the report of, one that has caught up with its
          // list: not one naming fewer listings than the list counts when the count has just
          // risen (the report that follows the list comes within minutes; until then the report
          // says nothing of it), unless the replica dates the rise: then its report says the
          // count and its change as its list does, and the listings it does not name are
          // listings no report names. By the listings it names. Recorded once for the rules
          // below that read it.
          {
            record: 'asset:reputation_blacklistings_named:reported',
            expr: 'max without (%(r)s) (%(x)s)' % {
              r: c.replicaLabel,
              x: current('reputation_blacklistings_named{%(s)s} unless (reputation_blacklistings_named{%(s)s} < reputation_blacklistings{%(s)s} and reputation_blacklistings_change{%(s)s} > 0 unless reputation_blacklistings_rise_timestamp_seconds{%(s)s})' % { s: c.selector }),
            },
          },
          // Assets whose report says the API last updated them more than checkOldSeconds ago
          // (the newest Sender Score history date): the change their list shows is old news.
          // Held while no current replica has the asset's report.
          {
            record: 'asset:reputation_senderscore_last_update_timestamp_seconds:old',
            expr: 'max without (%s) (%s) < time() - %d\nor\n(%s offset 1m unless on (%s) %s)' % [
              c.replicaLabel,
              current('reputation_senderscore_last_update_timestamp_seconds{%s}' % c.selector),
              c.checkOldSeconds,
              rec('asset:reputation_senderscore_last_update_timestamp_seconds:old'),
              asset,
              reported,
            ],
          },
          // A score drop at the API's last check, once every current replica has seen it (so
          // the asset's report, which dates it, has had its chance), unless it is old news.
          seen('reputation_senderscore_change', drop),
          {
            record: 'asset:reputation_senderscore_change:paging',
            expr: held(self.record, '(%s\nor %s)\nunless on (%s) %s' % [everyCurrent('reputation_senderscore_change', drop, 'min', self.record), missed('reputation_senderscore_missed_change', '<= -%d' % c.senderScoreDrop, 'max', self.record), asset, rec('asset:reputation_senderscore_last_update_timestamp_seconds:old')]),
          },
          pagedAt('asset:reputation_senderscore_change:paging'),
          // A new SNDS block at the API's last check; likewise.
          seen('reputation_snds_blocked_change', block),
          {
            record: 'asset:reputation_snds_blocked_change:paging',
            expr: held(self.record, '(%s\nor %s)\nunless on (%s) %s' % [everyCurrent('reputation_snds_blocked_change', block, 'max', self.record), missed('reputation_snds_blocked_missed_change', '> 0', 'min', self.record), asset, rec('asset:reputation_senderscore_last_update_timestamp_seconds:old')]),
          },
          pagedAt('asset:reputation_snds_blocked_change:paging'),
          // A replica's report older than its list: it names more listings that began an API
          // check interval (apiCheckSeconds) or more before the replica's last list poll than
          // that list counts (a replica back from a time without the API, before its report
          // follows the list), and these listings are the ones in doubt. Listings begun since
          // may not be counted yet: a report that names them is newer than the list, not older.
          {
            record: 'replica_asset_blacklist:reputation_blacklist_listed_since:outdated',
            local old = 'reputation_blacklist_listed_since_timestamp_seconds{%s}\n< on (job, %s, %s) group_left\nmin without (endpoint, %s) (reputation_last_success_timestamp_seconds{%s, %s}) - %d' % [
              c.selector,
              c.accountLabel,
              c.replicaLabel,
              c.shardLabel,
              c.selector,
              lists,
              c.apiCheckSeconds,
            ],
            expr: '%s\nand on (%s, %s) (count without (blacklist) (%s) > reputation_blacklistings{%s})' % [old, asset, c.replicaLabel, old, c.selector],
          },
          // When a current replica's report last said a blacklist delisted the asset (its
          // newest event of that blacklist, on a blacklist it no longer lists the asset on: no
          // listed-since series), remembered listingNewSeconds after the replica that said it
          // goes (a restart): evidence that a listing begun before is over, whatever an older
          // report of another replica still names. Only delistings of the last
          // listingNewSeconds are kept: every listing they are compared with began later (older
          // ones page no more), so the record is as sparse as the new listings.
          {
            record: 'asset_blacklist:reputation_blacklist_delisted:max',
            expr: 'max without (%s) (%s) > time() - %d\nor\n%s offset 1m > time() - %d' % [
              c.replicaLabel,
              current('reputation_blacklist_last_change_timestamp_seconds{%(s)s} unless reputation_blacklist_listed_since_timestamp_seconds{%(s)s}' % { s: c.selector }),
              c.listingNewSeconds,
              rec('asset_blacklist:reputation_blacklist_delisted:max'),
              c.listingNewSeconds,
            ],
          },
          // Listings a report names that began less than listingNewSeconds ago, by when they
          // began, from the current replicas' reports (an outdated report opens none, nor one
          // that another current replica's report says was delisted since). Held,
          // whatever the replicas serve meanwhile, until the data says the listing is over: a
          // current replica's report says that blacklist delisted the asset after the listing
          // began, or a current replica's list, polled an API check interval after the
          // listing began, counts no listing. A report older than the listing (a replica whose
          // round has not come, whose reports fail, or that started cold) ends nothing.
          {
            record: 'asset_blacklist:reputation_blacklist_listed_since:new',
            local held = rec('asset_blacklist:reputation_blacklist_listed_since:new') + ' offset 1m',
            local outdated = rec('replica_asset_blacklist:reputation_blacklist_listed_since:outdated'),
            local delisted = rec('asset_blacklist:reputation_blacklist_delisted:max'),
            local uncounted = 'max without (%(r)s) ((reputation_blacklistings{%(s)s} == 0) * 0 + on (job, %(a)s, %(r)s) group_left %(current)s) - %(check)d' % {
              r: c.replicaLabel,
              s: c.selector,
              a: c.accountLabel,
              current: rec('replica:reputation_last_success_timestamp_seconds:current'),
              check: c.apiCheckSeconds,
            },
            local since = 'reputation_blacklist_listed_since_timestamp_seconds{%s}' % c.selector,
            expr: '%(live)s > time() - %(new)d\nor\n(%(held)s > time() - %(new)d\nunless on (%(asset)s, blacklist) (%(delisted)s >= on (%(asset)s, blacklist) %(held)s)\nunless on (%(asset)s, blacklist) (%(held)s < on (%(asset)s) group_left %(uncounted)s))' % {
              live: 'max without (%s) (%s)' % [c.replicaLabel, current('%s unless on (%s, blacklist, %s) %s unless on (%s, blacklist, %s) (%s <= on (%s, blacklist) group_left %s)' % [since, asset, c.replicaLabel, outdated, asset, c.replicaLabel, since, asset, delisted])],
              new: c.listingNewSeconds,
              held: held,
              asset: asset,
              delisted: delisted,
              uncounted: uncounted,
            },
          },
          // Each current replica's rise, where it sees one: how many blacklists it added (the
          // count's page says the most any current replica saw, `riseMax`), and which
          // replicas' reports date it (`riseDate`). The rules below read it, not every
          // replica's change again.
          {
            record: 'replica_asset:reputation_blacklistings_change:current',
            expr: current(rise),
          },
          // The list's count where a current replica sees a rise (the highest any current
          // replica serves), and when the rules first saw that count rising: the lists that
          // showed the rise were polled by then, so the API check that counted it was too,
          // and a listing begun later is not part of it. A count that changes (a later
          // check's rise), or a minute without a rise, starts it again (never earlier than
          // the truth: a restart or a missed scrape makes it later, and looser).
          {
            record: 'asset:reputation_blacklistings:rising',
            expr: 'max without (%s) (%s) and on (%s) %s' % [c.replicaLabel, current('reputation_blacklistings{%s} > 0' % c.selector), asset, rec('replica_asset:reputation_blacklistings_change:current')],
          },
          {
            record: 'asset:reputation_blacklistings_change:first_seen',
            local rising = rec('asset:reputation_blacklistings:rising'),
            expr: '%s offset 1m and on (%s) (%s == %s offset 1m)\nor\n%s * 0 + time()' % [rec(self.record), asset, rising, rising, rising],
          },
          // What the lists said a minute before the rules first saw a rise bounds when its
          // listings began: every current replica's list then showed an earlier API check
          // (without this count rising), so the check before the rise was no earlier than an
          // interval (apiCheckSeconds) before the newest of those lists, and the listings it
          // counted began after that. Kept while the rise stands; none where no replica was
          // current then (an outage, every replica restarting, a missed evaluation) or the
          // count fell to it (a replica behind another).
          {
            record: 'asset:reputation_blacklistings_change:after',
            local rising = rec('asset:reputation_blacklistings:rising'),
            expr: '%(own)s offset 1m and on (%(asset)s) (%(rising)s == %(rising)s offset 1m)\nor\n(%(seen)s == time() unless on (%(asset)s) %(rising)s < %(rising)s offset 1m) * 0 + on (job, %(a)s) group_left max by (job, %(a)s) (%(current)s offset 1m) - %(check)d' % {
              own: rec('asset:reputation_blacklistings_change:after'),
              asset: asset,
              rising: rising,
              seen: rec('asset:reputation_blacklistings_change:first_seen'),
              a: c.accountLabel,
              current: rec('replica:reputation_last_success_timestamp_seconds:current'),
              check: c.apiCheckSeconds,
            },
          },
          // How many listings the asset's report names (when any), held while no current
          // replica has the report (the replica that reports on it restarting, or cut off
          // from the API) and the lists still count one, but not past a rise first seen in
          // that time: the held report is older than the rise and says nothing of it.
          {
            record: 'asset:reputation_blacklistings_named:max',
            expr: 'max without (%s) (%s)\nor\n(%s offset 1m unless on (%s) %s unless on (%s) %s unless on (%s) %s == time())' % [
              c.replicaLabel,
              current('reputation_blacklistings_named{%s} > 0' % c.selector),
              rec('asset:reputation_blacklistings_named:max'),
              asset,
              reported,
              asset,
              unlisted,
              asset,
              rec('asset:reputation_blacklistings_change:first_seen'),
            ],
          },
          // A rise of the list's count at the API's last check, once every current replica
          // has seen it (the one that reports on the asset among them), that no report names:
          // the report names fewer listings than the list counts, and fewer listings explain
          // it (`explaining`: begun since the API check before the rise, and by the latest
          // its listings can have begun) than the count rose by, of the listings the pages hold (so that a
          // cold start of the replica reporting on the asset explains nothing away). A listing
          // begun after the latest the rise's listings can have begun (riseLatest: the rise's
          // check, or when the rules first saw it) does not count among those named either.
          // Its value is the rise.
          {
            record: 'asset:reputation_blacklistings_change:unnamed',
            local since = rec('asset_blacklist:reputation_blacklist_listed_since:new'),
            expr: held(
              self.record,
              '%(rise)s and on (%(asset)s) %(every)s\nunless on (%(asset)s)\n(%(named)s - (count without (blacklist) (%(since)s > on (%(asset)s) group_left () %(seen)s) or %(named)s * 0) >= %(count)s\nor count without (blacklist) (%(explaining)s) >= %(ended)s + on (%(asset)s) group_right %(rise)s)' % {
                asset: asset,
                every: everySees('reputation_blacklistings_change', 'asset:reputation_blacklistings_change:unnamed', 'count without (%s) (%s)' % [c.replicaLabel, rec('replica_asset:reputation_blacklistings_change:current')]),
                rise: riseMax,
                ended: riseEnded,
                seen: riseLatest,
                since: since,
                named: rec('asset:reputation_blacklistings_named:max'),
                count: rec('asset:reputation_blacklistings:rising'),
                explaining: explaining,
              }
            ),
          },
          // When the count's page began (its rise had stood listingCountFor), while it stands,
          // and remembered listingNewSeconds after it (the start of the last one).
          {
            record: 'asset:reputation_blacklistings_change:paging_since',
            local u = rec('asset:reputation_blacklistings_change:unnamed'),
            local name = rec('asset:reputation_blacklistings_change:paging_since'),
            expr: '%s offset 1m and on (%s) %s\nor\n(%s and %s offset %s) * 0 + time()' % [name, asset, u, u, u, c.listingCountFor],
          },
          {
            record: 'asset:reputation_blacklistings_change:paged_since',
            expr: '%s\nor\n%s offset 1m > time() - %d' % [rec('asset:reputation_blacklistings_change:paging_since'), rec('asset:reputation_blacklistings_change:paged_since'), c.listingNewSeconds],
          },
          // Of the last count page: the bound its rise had when the page began (the :after
          // of then: its listings began later), and when the count page before it began;
          // remembered with it. A listing a report names late that began by both was an
          // earlier count page's (the reporting replica cut off through two rises or more).
          {
            record: 'asset:reputation_blacklistings_change:paged_after',
            expr: withPage(self.record, rec('asset:reputation_blacklistings_change:after')),
          },
          {
            record: 'asset:reputation_blacklistings_change:paged_before',
            expr: withPage(self.record, rec('asset:reputation_blacklistings_change:paged_since') + ' offset 1m'),
          },
          // The listing the count's page announced: begun listingCountFor or more before that
          // page began (a listing of its rise began before the check that counted it, which the
          // rules saw before the rise had stood listingCountFor; one begun later is the next
          // check's, and pages by name), and first
          // named (a report that came late) when no rise is left unnamed, or while one is, as
          // one of the listings that explain it (the page says "2 more" and a report names
          // one of the two); of several named at once, the one begun first, and one a page
          // (the others page by name), or while the page stands, one begun after the bound its
          // rise had when the page began (:paged_after). Its value is when that page began;
          // remembered while the listing is new. One listing, one page. A listing first named
          // that began by that bound and listingCountFor before the count page before it
          // began (:paged_before) was that earlier page's (rises an API check or more apart,
          // the reporting replica cut off through them): taken too, valued when it began.
          {
            record: 'asset_blacklist:reputation_blacklist_listed_since:counted',
            local name = 'asset_blacklist:reputation_blacklist_listed_since:counted',
            local since = rec('asset_blacklist:reputation_blacklist_listed_since:new'),
            local fresh = '(%(since)s unless on (%(asset)s, blacklist) %(since)s offset 1m)' % { since: since, asset: asset },
            local earlier = '%(fresh)s <= on (%(asset)s) group_left %(after)s <= on (%(asset)s) group_left () (%(before)s - %(countFor)d)' % {
              fresh: fresh,
              asset: asset,
              after: rec('asset:reputation_blacklistings_change:paged_after'),
              before: rec('asset:reputation_blacklistings_change:paged_before'),
              countFor: seconds(c.listingCountFor),
            },
            expr: '%(name)s offset 1m and on (%(asset)s, blacklist) %(since)s\nor\n%(paged)s >= on (%(asset)s) group_right () (bottomk by (%(asset)s) (1, (%(fresh)s unless on (%(asset)s) %(unnamed)s\nor %(fresh)s and on (%(asset)s, blacklist) (%(explaining)s)\nor %(fresh)s > on (%(asset)s) group_left %(pagedAfter)s <= on (%(asset)s) group_left () %(latest)s and on (%(asset)s) %(unnamed)s) unless on (%(asset)s, blacklist) (%(earlier)s)) + %(countFor)d)\nunless on (%(asset)s) (%(name)s offset 1m == on (%(asset)s) group_left %(paged)s)\nor\n%(earlier)s' % {
              since: since,
              fresh: fresh,
              earlier: earlier,
              asset: asset,
              name: rec(name),
              paged: rec('asset:reputation_blacklistings_change:paged_since'),
              unnamed: rec('asset:reputation_blacklistings_change:unnamed'),
              explaining: explaining,
              countFor: seconds(c.listingCountFor),
              pagedAfter: rec('asset:reputation_blacklistings_change:paged_after'),
              latest: riseLatest,
            },
          },
          // How long no replica has polled the account's lists (the older list endpoint's
          // newest success). A replica's last success counts for replicaHeld after its last
          // scrape (a replica restarting while another cannot reach the API), and the age goes
          // on counting while no replica has served one that long (every replica restarting,
          // or started cold during an API outage).
          {
            record: 'account:reputation_last_success_age_seconds:max',
            local name = 'account:reputation_last_success_age_seconds:max',
            expr: 'time() - min without (endpoint) (max without (%s, %s) (max_over_time(reputation_last_success_timestamp_seconds{%s, %s}[%s])))\nor\n%s offset 1m + 60' % [
              c.replicaLabel,
              c.shardLabel,
              c.selector,
              lists,
              c.replicaHeld,
              rec(name),
            ],
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
