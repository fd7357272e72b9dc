package mirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/systems/mirror/settings"
)

// The states Kafka Connect gives a connector or a task
// (AbstractStatus.State). Every one is served, 0 or 1, so that a query for
// FAILED finds a series before anything failed.
var connectStates = []string{"RUNNING", "PAUSED", "STOPPED", "FAILED", "UNASSIGNED", "RESTARTING"}

// Connector kinds, by the Mirror connector class.
const (
	kindSource     = "source"
	kindCheckpoint = "checkpoint"
	kindHeartbeat  = "heartbeat"
	kindOther      = "other"
)

// maxConnectReply bounds what is read of the REST API's reply: it holds
// every connector's config, and a Connect cluster may run hundreds.
const maxConnectReply = 16 << 20

// maxTraceLine bounds the failure trace kept per connector or task: its
// first line, the exception and its message.
const maxTraceLine = 300

// ConnectState is what the flow's Kafka Connect REST API said at the
// refresh, when the flow has one (settings.Connect).
type ConnectState struct {
	// Configured is set when the flow names a REST API; Read when it
	// answered.
	Configured, Read bool
	// Connectors are the flow's connectors, by name.
	Connectors []Connector
	// Missing lists connectors the config names that the REST API does
	// not know, or "source" when none was named and no
	// MirrorSourceConnector for the flow's aliases was found.
	Missing []string
}

// Connector is one of the flow's connectors and its tasks.
type Connector struct {
	Name string
	// Kind is source, checkpoint, heartbeat (the Mirror connector
	// classes) or other.
	Kind   string
	State  string
	Worker string
	// Trace is the first line of the failure trace of a FAILED connector.
	Trace string
	Tasks []Task
}

// Task is one task of a connector.
type Task struct {
	ID     int32
	State  string
	Worker string
	Trace  string
}

// connectReader asks a Kafka Connect REST API for the flow's connectors.
type connectReader struct {
	cfg         settings.Connect
	client      *http.Client
	transport   *http.Transport
	aliasSource string
	aliasTarget string
}

func newConnectReader(m settings.Flow) (*connectReader, error) {
	if m.Connect == nil {
		return nil, nil
	}
	tlsConfig, err := m.Connect.TLS.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("connect tls: %w", err)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsConfig
	transport.Proxy = nil // the REST API is the workers' own address
	return &connectReader{
		cfg: *m.Connect, transport: transport, client: &http.Client{Transport: transport},
		aliasSource: m.SourceAlias, aliasTarget: m.TargetAlias,
	}, nil
}

func (r *connectReader) close() {
	if r != nil {
		r.transport.CloseIdleConnections()
	}
}

// connectorsReply is GET /connectors?expand=status&expand=info, by
// connector name.
type connectorsReply map[string]struct {
	Info *struct {
		Config map[string]string `json:"config"`
	} `json:"info"`
	Status *struct {
		Connector struct {
			State    string `json:"state"`
			WorkerID string `json:"worker_id"`
			Trace    string `json:"trace"`
		} `json:"connector"`
		Tasks []struct {
			ID       *int32 `json:"id"`
			State    string `json:"state"`
			WorkerID string `json:"worker_id"`
			Trace    string `json:"trace"`
		} `json:"tasks"`
	} `json:"status"`
}

// read asks for every connector with its status and config in one
// request, and keeps the flow's.
func (r *connectReader) read(ctx context.Context) (ConnectState, error) {
	state := ConnectState{Configured: true}
	reply, err := r.get(ctx)
	if err != nil {
		return state, err
	}
	connectors, missing, err := r.flowConnectors(reply)
	if err != nil {
		return state, err
	}
	state.Read, state.Connectors, state.Missing = true, connectors, missing
	return state, nil
}

func (r *connectReader) get(ctx context.Context) (connectorsReply, error) {
	endpoint := strings.TrimSuffix(r.cfg.URL, "/") + "/connectors?expand=status&expand=info"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if r.cfg.Username != "" {
		password, err := r.cfg.Password.Value()
		if err != nil {
			return nil, fmt.Errorf("connect password: %w", err)
		}
		req.SetBasicAuth(r.cfg.Username, password)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		// The error repeats the URL, and is logged: never with whatever
		// credentials a URL the config check did not see might hold.
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			urlErr.URL = config.RedactURL(urlErr.URL)
		}
		return nil, fmt.Errorf("connect GET /connectors: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxConnectReply+1))
	if err != nil {
		return nil, fmt.Errorf("connect GET /connectors: read reply: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("connect GET /connectors: %s: %s", resp.Status, firstLine(string(body), maxTraceLine))
	}
	if len(body) > maxConnectReply {
		return nil, fmt.Errorf("connect GET /connectors: reply larger than %d MiB", maxConnectReply>>20)
	}
	var reply connectorsReply
	if err := json.Unmarshal(body, &reply); err != nil {
		return nil, fmt.Errorf("connect GET /connectors: not the Connect REST API's reply (%w): %s", err, firstLine(string(body), 100))
	}
	return reply, nil
}

// flowConnectors keeps the connectors the config names, or, when it names
// none, those of a Mirror connector class whose aliases are the flow's (a
// heartbeat connector in either direction: the reverse one is what writes
// heartbeats into the source cluster for the flow to replicate).
func (r *connectReader) flowConnectors(reply connectorsReply) ([]Connector, []string, error) {
	var names, missing []string
	if len(r.cfg.Connectors) > 0 {
		for _, name := range r.cfg.Connectors {
			if _, ok := reply[name]; ok {
				names = append(names, name)
			} else {
				missing = append(missing, name)
			}
		}
	} else {
		for name, c := range reply {
			if c.Info != nil && r.ofFlow(c.Info.Config) {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	var connectors []Connector
	for _, name := range names {
		c := reply[name]
		if c.Status == nil {
			return nil, nil, fmt.Errorf("connect GET /connectors: connector %q has no status (a Connect older than 2.3 ignores expand=status)", name)
		}
		kind := kindOther
		if c.Info != nil {
			kind = connectorKind(c.Info.Config["connector.class"])
		}
		connector := Connector{Name: name, Kind: kind, State: c.Status.Connector.State, Worker: c.Status.Connector.WorkerID,
			Trace: firstLine(c.Status.Connector.Trace, maxTraceLine)}
		for _, t := range c.Status.Tasks {
			if t.ID == nil {
				return nil, nil, fmt.Errorf("connect GET /connectors: a task of %q has no id", name)
			}
			connector.Tasks = append(connector.Tasks, Task{ID: *t.ID, State: t.State, Worker: t.WorkerID, Trace: firstLine(t.Trace, maxTraceLine)})
		}
		slices.SortFunc(connector.Tasks, func(a, b Task) int { return int(a.ID - b.ID) })
		connectors = append(connectors, connector)
	}
	if len(r.cfg.Connectors) == 0 && !slices.ContainsFunc(connectors, func(c Connector) bool { return c.Kind == kindSource }) {
		missing = append(missing, kindSource)
	}
	return connectors, missing, nil
}

// ofFlow reports whether a connector's config makes it one of the flow's.
func (r *connectReader) ofFlow(cfg map[string]string) bool {
	kind := connectorKind(cfg["connector.class"])
	src, dst := cfg["source.cluster.alias"], cfg["target.cluster.alias"]
	switch kind {
	case kindSource, kindCheckpoint:
		return src == r.aliasSource && dst == r.aliasTarget
	case kindHeartbeat:
		return (src == r.aliasSource && dst == r.aliasTarget) || (src == r.aliasTarget && dst == r.aliasSource)
	}
	return false
}

// connectorKind names a Mirror connector class, given in full or by its
// simple name (Connect accepts both).
func connectorKind(class string) string {
	simple := class[strings.LastIndex(class, ".")+1:]
	switch simple {
	case "MirrorSourceConnector":
		return kindSource
	case "MirrorCheckpointConnector":
		return kindCheckpoint
	case "MirrorHeartbeatConnector":
		return kindHeartbeat
	}
	return kindOther
}

// firstLine is the first line of s, at most n bytes of it.
func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}
