package chart

import (
	"maps"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
)

// haObjects renders the chart with a Redis cluster and vals on top, and
// returns its Deployment (nil in sidecar mode) and PodDisruptionBudget.
func haObjects(t *testing.T, vals map[string]any) (*appsv1.Deployment, *policyv1.PodDisruptionBudget) {
	t.Helper()
	all := map[string]any{"config": map[string]any{"redis": []any{map[string]any{"name": "sessions", "addrs": []any{"redis-0.redis:6379"}}}}}
	maps.Copy(all, vals)
	out, err := renderValues(t, all)
	if err != nil {
		t.Fatal(err)
	}
	var d *appsv1.Deployment
	var pdb *policyv1.PodDisruptionBudget
	for _, o := range decodeAll(t, out) {
		switch v := o.obj.(type) {
		case *appsv1.Deployment:
			d = v
		case *policyv1.PodDisruptionBudget:
			pdb = v
		}
	}
	return d, pdb
}

// TestChartHighAvailability: the per-cluster mode runs two replicas by
// default, kept apart across nodes (preferred) and zones (when the nodes
// allow), with a PodDisruptionBudget that lets one go at a time and selects
// exactly the exporter's pods; one replica, sidecar mode, or the user's own
// affinity and constraints turn the defaults off.
func TestChartHighAvailability(t *testing.T) {
	d, pdb := haObjects(t, nil)
	if d == nil || d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Fatalf("default Deployment replicas %v, want 2", d.Spec.Replicas)
	}
	pod := d.Spec.Template
	if pdb == nil {
		t.Fatal("no PodDisruptionBudget with two replicas")
	}
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 || pdb.Spec.MinAvailable != nil {
		t.Errorf("PDB maxUnavailable %v, minAvailable %v: want maxUnavailable 1 alone", pdb.Spec.MaxUnavailable, pdb.Spec.MinAvailable)
	}
	if !selects(pdb.Spec.Selector.MatchLabels, pod.Labels) || !maps.Equal(pdb.Spec.Selector.MatchLabels, d.Spec.Selector.MatchLabels) {
		t.Errorf("PDB selector %v does not select the Deployment's pods %v as its own selector %v does", pdb.Spec.Selector.MatchLabels, pod.Labels, d.Spec.Selector.MatchLabels)
	}
	aa := pod.Spec.Affinity
	if aa == nil || aa.PodAntiAffinity == nil || len(aa.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 || len(aa.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 0 {
		t.Fatalf("default affinity %+v, want one preferred pod anti-affinity term", aa)
	}
	term := aa.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm
	if term.TopologyKey != "kubernetes.io/hostname" || !selects(term.LabelSelector.MatchLabels, pod.Labels) {
		t.Errorf("anti-affinity term %+v: want kubernetes.io/hostname, selecting the exporter's pods %v", term, pod.Labels)
	}
	spread := pod.Spec.TopologySpreadConstraints
	if len(spread) != 1 || spread[0].TopologyKey != "topology.kubernetes.io/zone" || spread[0].WhenUnsatisfiable != corev1.ScheduleAnyway ||
		spread[0].MaxSkew != 1 || !selects(spread[0].LabelSelector.MatchLabels, pod.Labels) {
		t.Errorf("default spread %+v: want maxSkew 1 across topology.kubernetes.io/zone, ScheduleAnyway, selecting the exporter's pods", spread)
	}

	// hard: required across nodes.
	d, _ = haObjects(t, map[string]any{"podAntiAffinity": "hard"})
	if aa := d.Spec.Template.Spec.Affinity; aa == nil || aa.PodAntiAffinity == nil || len(aa.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 ||
		aa.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey != "kubernetes.io/hostname" {
		t.Errorf("podAntiAffinity hard: affinity %+v, want one required term on kubernetes.io/hostname", aa)
	}
	// The user's own win.
	own := map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
		"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "pool", "operator": "In", "values": []any{"monitoring"}}}}}}}}
	ownSpread := []any{map[string]any{"maxSkew": 2, "topologyKey": "rack", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": map[string]any{"matchLabels": map[string]any{"a": "b"}}}}
	d, _ = haObjects(t, map[string]any{"affinity": own, "topologySpreadConstraints": ownSpread})
	if s := d.Spec.Template.Spec; s.Affinity == nil || s.Affinity.PodAntiAffinity != nil || s.Affinity.NodeAffinity == nil ||
		len(s.TopologySpreadConstraints) != 1 || s.TopologySpreadConstraints[0].TopologyKey != "rack" {
		t.Errorf("with the user's affinity and constraints: %+v, %+v; want exactly theirs", s.Affinity, s.TopologySpreadConstraints)
	}
	// Off: "" and zoneSpread false; the PDB disabled.
	d, pdb = haObjects(t, map[string]any{"podAntiAffinity": "", "zoneSpread": false, "podDisruptionBudget": map[string]any{"enabled": false}})
	if s := d.Spec.Template.Spec; s.Affinity != nil || len(s.TopologySpreadConstraints) != 0 || pdb != nil {
		t.Errorf("all off: affinity %+v, spread %+v, PDB %v; want none", s.Affinity, s.TopologySpreadConstraints, pdb)
	}
	// One replica: none of it (a PDB of one would block every drain).
	d, pdb = haObjects(t, map[string]any{"replicaCount": 1})
	if s := d.Spec.Template.Spec; *d.Spec.Replicas != 1 || s.Affinity != nil || len(s.TopologySpreadConstraints) != 0 || pdb != nil {
		t.Errorf("one replica: replicas %d, affinity %+v, spread %+v, PDB %v; want one replica and none", *d.Spec.Replicas, s.Affinity, s.TopologySpreadConstraints, pdb)
	}
	// Sidecar mode: no Deployment, no PDB (the pods are the cluster's).
	d, pdb = haObjects(t, map[string]any{"mode": "sidecar", "sidecar": map[string]any{"podSelector": map[string]any{"app": "redis"}}})
	if d != nil || pdb != nil {
		t.Errorf("sidecar mode rendered Deployment %v, PDB %v; want neither", d != nil, pdb != nil)
	}
	// A bad value is refused by the schema.
	if _, err := renderValues(t, map[string]any{"podAntiAffinity": "always"}); err == nil {
		t.Error("podAntiAffinity always: rendered, want the schema's refusal")
	}
}

// selects reports whether every label of selector is in labels.
func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}
