package episode

import "time"

// The outage clock. A cluster confirms a failure only after its own
// timeout: Redis flags a master PFAIL once it missed pongs for
// cluster-node-timeout, Kafka takes a partition's leader away once the
// broker's session expired (broker.session.timeout.ms). Clients fail from
// the moment the node stops answering, well before that. The exporter
// probes every node and broker in every refresh, so its first failed probe
// is the earliest evidence of an outage; an episode the cluster confirms is
// backdated to it. Three moments matter:
//
//   - the last good probe: the last refresh in which the node answered;
//   - the first failed probe: the first refresh in which it did not (the
//     failure happened between the two, so this is at most one refresh
//     late);
//   - the cluster's confirmation: the first refresh whose cluster view
//     shows the failure. Without a failed probe (the exporter reaches the
//     node, but the cluster does not) the episode begins here.
//
// A probe failure the cluster never confirms begins nothing: it is the
// exporter's own network, not an outage.

// FailedSince carries the start of a node's run of failed probes into the
// next refresh: when the first probe of the run was sent, or zero when the
// node answered this refresh's probe, or when the run began before the
// exporter could see it begin (the exporter's first refresh, a node it had
// not seen before), so that no start is invented. seenBefore says whether
// the previous refresh knew the node; reachedBefore and sinceBefore are
// what it recorded.
func FailedSince(seenBefore, reachedBefore bool, sinceBefore time.Time, reachedNow bool, probedAt time.Time) time.Time {
	switch {
	case reachedNow || !seenBefore:
		return time.Time{}
	case reachedBefore:
		return probedAt
	default:
		return sinceBefore
	}
}

// Evidence is the first failed probe that explains a failure the cluster
// confirms now: the node's current run of failed probes or, for a node that
// answered again in the very refresh the cluster confirmed its failure (a
// short stall, a quick restart), the run that ended then. Zero when there
// is none.
func Evidence(failedSinceNow, failedSinceBefore time.Time, reachedBefore bool) time.Time {
	if !failedSinceNow.IsZero() {
		return failedSinceNow
	}
	if !reachedBefore {
		return failedSinceBefore
	}
	return time.Time{}
}

// Backdate returns when an episode that the cluster confirmed at
// confirmedAt began, given the first failed probe of the node that caused
// it (zero when none). A failed probe older than limit is not taken: a
// node the exporter could not reach for longer than the cluster needs to
// confirm a failure was cut off from the exporter, not from the cluster,
// and a later real failure must not inherit that start. limit 0 turns
// backdating off.
func Backdate(confirmedAt, firstFailedProbe time.Time, limit time.Duration) time.Time {
	if firstFailedProbe.IsZero() || !firstFailedProbe.Before(confirmedAt) || confirmedAt.Sub(firstFailedProbe) > limit {
		return confirmedAt
	}
	return firstFailedProbe
}
