package redisproto

import "errors"

var errNoMyself = errors.New("CLUSTER NODES has no myself line")

// View is what one node answered to CLUSTER NODES and CLUSTER INFO, read by
// a client that dialled it at Addr. A reader that keeps more of each node
// (the watcher: INFO replication, memory, migrations) embeds it in its own
// view type, and merges those with Merge.
type View struct {
	// Addr is the address the reader dialled.
	Addr  string
	Nodes []NodeLine
	Info  ClusterInfo
}

// ParseView decodes the replies of the node dialled at addr. A CLUSTER NODES
// reply without a myself line cannot be attributed to a node, and is an
// error.
func ParseView(addr, clusterNodes, clusterInfo string) (View, error) {
	v := View{Addr: addr}
	var err error
	if v.Nodes, err = ParseClusterNodes(clusterNodes); err != nil {
		return View{}, err
	}
	if v.Self() == nil {
		return View{}, errNoMyself
	}
	if v.Info, err = ParseClusterInfo(clusterInfo); err != nil {
		return View{}, err
	}
	return v, nil
}

// Self returns the view's myself line, nil when it has none.
func (v *View) Self() *NodeLine {
	for i := range v.Nodes {
		if v.Nodes[i].Flags.Myself {
			return &v.Nodes[i]
		}
	}
	return nil
}

// ProtoView returns the view itself: a type that embeds a View is a Viewer.
func (v *View) ProtoView() *View { return v }

// Viewer is a pointer to a reader's view type V that holds a View.
type Viewer[V any] interface {
	*V
	ProtoView() *View
}

// servesSlots reports whether the view is a master's that owns slots by its
// own line: one of the masters whose views decide the cluster-wide verdicts.
func (v *View) servesSlots() bool {
	self := v.Self()
	return self != nil && self.Flags.Master && self.SlotCount() > 0
}
