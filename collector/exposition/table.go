package exposition

// Table is a system's metric table: Health holds the refresh (or round)
// health families, served first; Series every other family, in exposition
// order. Gauge, Counter and Histogram add to Series a family whose labels
// start with Labels (the cluster's label), so a table's rows name only
// their own labels.
type Table struct {
	Labels []string
	// Buckets are the upper bounds of every histogram of the table.
	Buckets []float64
	Health  Set
	Series  Set
}

// Sets returns the table's two sets in exposition order: what a system's
// collector serves, and documentation and contract tests read.
func (t *Table) Sets() []*Set { return []*Set{&t.Health, &t.Series} }

// Gauge adds a gauge family to Series, labelled Labels then labels.
func (t *Table) Gauge(name, help string, labels ...string) *Desc {
	return t.Series.Gauge(name, help, t.labels(labels)...)
}

// Counter adds a counter family to Series, labelled Labels then labels.
func (t *Table) Counter(name, help string, labels ...string) *Desc {
	return t.Series.Counter(name, help, t.labels(labels)...)
}

// Histogram adds a histogram family with the table's Buckets to Series,
// labelled Labels then labels.
func (t *Table) Histogram(name, help string, labels ...string) *Desc {
	return t.Series.Histogram(name, help, t.Buckets, t.labels(labels)...)
}

func (t *Table) labels(own []string) []string {
	return append(append(make([]string, 0, len(t.Labels)+len(own)), t.Labels...), own...)
}
