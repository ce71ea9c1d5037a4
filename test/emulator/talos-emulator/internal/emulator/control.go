package emulator

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/configpatcher"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"
)

// maxControlBody bounds a control request body (a machine config is far smaller).
const maxControlBody = 4 << 20

// ControlHandler is the emulator's control API (JSON over HTTP, for tests and the engine tier):
//
//	GET  /nodes                       every node's status
//	GET  /nodes/{node}                one node's status ({node}: name or address)
//	PUT  /nodes/{node}/faults         replace the node's faults (JSON Faults)
//	POST /nodes/{node}/reboot         reboot (or power on a node that is off)
//	GET  /nodes/{node}/config         the node's machine config (YAML; holds secrets)
//	PUT  /nodes/{node}/config         replace the config behind the program's back (YAML body)
//	PATCH /nodes/{node}/config        patch it (a Talos config patch: strategic merge or JSON 6902)
//	GET  /clusters                    every cluster's etcd: members and revision
//	POST /shutdown                    stop the emulator
//
// stop is called for /shutdown.
func (e *Emulator) ControlHandler(stop func()) http.Handler {
	mux := http.NewServeMux()

	mux.HandleFunc("GET /nodes", func(w http.ResponseWriter, _ *http.Request) {
		statuses := []Status{}
		for _, n := range e.Nodes() {
			statuses = append(statuses, n.Status())
		}

		writeJSON(w, http.StatusOK, statuses)
	})

	mux.HandleFunc("GET /nodes/{node}", e.withNode(func(w http.ResponseWriter, _ *http.Request, n *Node) {
		writeJSON(w, http.StatusOK, n.Status())
	}))

	mux.HandleFunc("PUT /nodes/{node}/faults", e.withNode(func(w http.ResponseWriter, r *http.Request, n *Node) {
		var faults Faults

		decoder := json.NewDecoder(io.LimitReader(r.Body, maxControlBody))
		decoder.DisallowUnknownFields()

		if err := decoder.Decode(&faults); err != nil {
			controlError(w, http.StatusBadRequest, "faults: %v", err)

			return
		}

		e.log.Printf("%s: faults set to %+v", n.name, faults)
		n.SetFaults(faults)
		writeJSON(w, http.StatusOK, n.Status())
	}))

	mux.HandleFunc("POST /nodes/{node}/reboot", e.withNode(func(w http.ResponseWriter, _ *http.Request, n *Node) {
		n.Reboot()
		writeJSON(w, http.StatusAccepted, n.Status())
	}))

	mux.HandleFunc("GET /nodes/{node}/config", e.withNode(func(w http.ResponseWriter, _ *http.Request, n *Node) {
		cfg := n.config()
		if cfg == nil {
			controlError(w, http.StatusNotFound, "node %s has no config (maintenance mode)", n.name)

			return
		}

		data, err := cfg.EncodeBytes(encoder.WithComments(encoder.CommentsDisabled))
		if err != nil {
			controlError(w, http.StatusInternalServerError, "%v", err)

			return
		}

		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(data) //nolint:errcheck
	}))

	mux.HandleFunc("PUT /nodes/{node}/config", e.withNode(func(w http.ResponseWriter, r *http.Request, n *Node) {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxControlBody))
		if err != nil {
			controlError(w, http.StatusBadRequest, "%v", err)

			return
		}

		cfg, err := configloader.NewFromBytes(body)
		if err != nil {
			controlError(w, http.StatusBadRequest, "config: %v", err)

			return
		}

		if err = n.ReplaceConfig(cfg); err != nil {
			controlError(w, http.StatusConflict, "%v", err)

			return
		}

		writeJSON(w, http.StatusOK, n.Status())
	}))

	mux.HandleFunc("PATCH /nodes/{node}/config", e.withNode(func(w http.ResponseWriter, r *http.Request, n *Node) {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxControlBody))
		if err != nil {
			controlError(w, http.StatusBadRequest, "%v", err)

			return
		}

		current := n.config()
		if current == nil {
			controlError(w, http.StatusConflict, "node %s has no config (maintenance mode)", n.name)

			return
		}

		patches, err := configpatcher.LoadPatches([]string{string(body)})
		if err != nil {
			controlError(w, http.StatusBadRequest, "patch: %v", err)

			return
		}

		out, err := configpatcher.Apply(configpatcher.WithConfig(current), patches)
		if err != nil {
			controlError(w, http.StatusBadRequest, "patch: %v", err)

			return
		}

		cfg, err := out.Config()
		if err != nil {
			controlError(w, http.StatusBadRequest, "patched config: %v", err)

			return
		}

		if err = n.ReplaceConfig(cfg); err != nil {
			controlError(w, http.StatusConflict, "%v", err)

			return
		}

		writeJSON(w, http.StatusOK, n.Status())
	}))

	mux.HandleFunc("GET /clusters", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, e.clusterStatuses())
	})

	mux.HandleFunc("POST /shutdown", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusAccepted, map[string]string{"status": "stopping"})

		go stop()
	})

	return mux
}

func (e *Emulator) withNode(h func(http.ResponseWriter, *http.Request, *Node)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		n, ok := e.Node(r.PathValue("node"))
		if !ok {
			controlError(w, http.StatusNotFound, "no node %q", r.PathValue("node"))

			return
		}

		h(w, r, n)
	}
}

func controlError(w http.ResponseWriter, code int, format string, args ...any) {
	writeJSON(w, code, map[string]string{"error": fmt.Sprintf(format, args...)})
}

// ClusterStatus is a cluster's etcd as the control API reports it.
type ClusterStatus struct {
	Name         string         `json:"name"`
	Bootstrapped bool           `json:"bootstrapped"`
	Revision     int64          `json:"revision"`
	Keys         int            `json:"keys"`
	Members      []MemberStatus `json:"members"`
	Kubernetes   string         `json:"kubernetes,omitempty"`
	// Defragmentations are the members' `etcd defrag`s, in the order they ran.
	Defragmentations []Defragmentation `json:"defragmentations"`
}

// MemberStatus is one etcd member.
type MemberStatus struct {
	ID       string `json:"id"`
	Hostname string `json:"hostname"`
	Address  string `json:"address"`
	// PeerURL is what the member's etcd advertises (Talos' rules: cluster.etcd.advertisedSubnets).
	PeerURL string `json:"peerURL"`
	Learner bool   `json:"learner"`
	// Leader: the member the voters follow; DBSize and DBSizeInUse: its database file and the part in
	// use, in bytes (what `talosctl etcd status` shows).
	Leader      bool  `json:"leader"`
	DBSize      int64 `json:"dbSize"`
	DBSizeInUse int64 `json:"dbSizeInUse"`
}

func (e *Emulator) clusterStatuses() []ClusterStatus {
	e.mu.Lock()
	clusters := make([]*Cluster, 0, len(e.clusters))

	for _, c := range e.clusters {
		clusters = append(clusters, c)
	}
	e.mu.Unlock()

	statuses := make([]ClusterStatus, 0, len(clusters))

	for _, c := range clusters {
		views := c.views()

		c.mu.Lock()
		leader := c.etcd.currentLeader(etcdUp(views))
		st := ClusterStatus{Name: c.name, Bootstrapped: c.etcd.bootstrapped, Revision: c.etcd.store.revision, Keys: len(c.etcd.store.keys), Members: []MemberStatus{}}

		for _, m := range c.etcd.sortedMembers() {
			st.Members = append(st.Members, MemberStatus{ID: fmt.Sprintf("%016x", m.id), Hostname: m.hostname, Address: m.addr.String(), PeerURL: m.peerURL(), Learner: m.learner, Leader: m.id == leader, DBSize: c.etcd.dbSize(m.id), DBSizeInUse: c.etcd.inUse()})
		}

		st.Defragmentations = append([]Defragmentation{}, c.etcd.upkeep.defrags...)

		if c.kube != nil {
			st.Kubernetes = "https://" + c.kube.listener.Addr().String()
		}
		c.mu.Unlock()

		statuses = append(statuses, st)
	}

	sort.Slice(statuses, func(i, j int) bool { return statuses[i].Name < statuses[j].Name })

	return statuses
}
