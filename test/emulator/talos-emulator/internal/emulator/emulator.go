// Package emulator emulates Talos Linux nodes on loopback addresses: each node serves the real Talos
// gRPC API (machinery's API definitions) on <address>:50000, first in maintenance mode (an insecure
// ApplyConfiguration, as a freshly booted node) and then with mTLS from the OS CA of the config it
// received. Nodes that share a cluster (the same cluster ID in their configs) share an emulated etcd
// and a minimal Kubernetes API on the cluster endpoint. Faults can be injected per node.
package emulator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/siderolabs/crypto/x509"
	"github.com/siderolabs/talos/pkg/machinery/config"
)

// Timings are how long the emulated steps take. Real nodes take minutes; the defaults keep a test
// run short while every step still happens asynchronously, as on a node.
type Timings struct {
	// Boot is the time from power-on (or reboot) until the API answers and services start.
	Boot time.Duration `json:"boot"`
	// Services is the time from the API answering until the services report their final state.
	Services time.Duration `json:"services"`
	// Shutdown is the time a reboot keeps the node off the network.
	Shutdown time.Duration `json:"shutdown"`
	// EtcdJoin is the time a control plane needs to join etcd (as a learner, then promoted).
	EtcdJoin time.Duration `json:"etcdJoin"`
	// Install is the time the installer (upgrade) runs.
	Install time.Duration `json:"install"`
}

// DefaultTimings are short but real waits. A reboot keeps the node off the network for
// Shutdown+Boot and ready Services later: longer than talosctl's one-second retries, so its reboot
// tracking (a new event watch after "reboot sequence completed") lands in the reboot, as on a real
// node; shorter, the watch can start after the node is ready again and wait for events that already
// happened.
var DefaultTimings = Timings{
	Boot:     time.Second,
	Services: time.Second,
	Shutdown: time.Second,
	EtcdJoin: 500 * time.Millisecond,
	Install:  500 * time.Millisecond,
}

// Options configure an emulator.
type Options struct {
	// Version is the Talos version nodes run until upgraded (a tag such as v1.13.0).
	Version string
	// APIPort is the Talos API port (50000 on real nodes).
	APIPort int
	Timings Timings
	Logger  *log.Logger
}

// NodeSpec names one node and its loopback address.
type NodeSpec struct {
	Name    string     `json:"name"`
	Address netip.Addr `json:"address"`
	// Extra are other addresses the node holds (a dual-stack node's second family): Talos' rules pick
	// among all of them what etcd advertises and the kubelet reports. The Talos API answers on Address.
	Extra []netip.Addr `json:"extra,omitempty"`
}

// Emulator owns every emulated node and cluster of one run.
type Emulator struct {
	opts Options
	log  *log.Logger

	ctx    context.Context //nolint:containedctx // the run's lifetime, cancelled by Stop
	cancel context.CancelFunc

	mu       sync.Mutex
	nodes    []*Node
	byAddr   map[netip.Addr]*Node
	clusters map[string]*Cluster

	wg sync.WaitGroup
}

// New creates an emulator with no nodes.
func New(opts Options) (*Emulator, error) {
	if opts.Version == "" {
		return nil, errors.New("options: Version is required (for example v1.13.0)")
	}

	if _, err := parseTag(opts.Version); err != nil {
		return nil, fmt.Errorf("options: Version: %w", err)
	}

	if opts.APIPort == 0 {
		opts.APIPort = 50000
	}

	if opts.Timings == (Timings{}) {
		opts.Timings = DefaultTimings
	}

	if opts.Logger == nil {
		opts.Logger = log.Default()
	}

	ctx, cancel := context.WithCancel(context.Background())

	return &Emulator{
		opts:     opts,
		log:      opts.Logger,
		ctx:      ctx,
		cancel:   cancel,
		byAddr:   map[netip.Addr]*Node{},
		clusters: map[string]*Cluster{},
	}, nil
}

// AddNode powers on one node in maintenance mode; its address must be a loopback address.
func (e *Emulator) AddNode(spec NodeSpec) (*Node, error) {
	if !spec.Address.IsLoopback() {
		return nil, fmt.Errorf("node %q: address %s is not a loopback address (127.0.0.0/8); the emulator listens on loopback only", spec.Name, spec.Address)
	}

	if spec.Name == "" {
		return nil, fmt.Errorf("node at %s: a name is required", spec.Address)
	}

	e.mu.Lock()

	// The extra addresses are never listened on: "nodes" metadata naming them reaches the node in process.
	for _, addr := range append([]netip.Addr{spec.Address}, spec.Extra...) {
		if _, ok := e.byAddr[addr]; ok {
			e.mu.Unlock()

			return nil, fmt.Errorf("node %q: address %s is already used", spec.Name, addr)
		}
	}

	for _, n := range e.nodes {
		if n.name == spec.Name {
			e.mu.Unlock()

			return nil, fmt.Errorf("node %q: the name is already used", spec.Name)
		}
	}

	// Fail now, not at the asynchronous boot, when another process holds the address.
	probe, err := net.Listen("tcp", net.JoinHostPort(spec.Address.String(), strconv.Itoa(e.opts.APIPort)))
	if err != nil {
		e.mu.Unlock()

		return nil, fmt.Errorf("node %q: %w", spec.Name, err)
	}

	probe.Close() //nolint:errcheck

	n := newNode(e, spec)
	e.nodes = append(e.nodes, n)
	for _, addr := range append([]netip.Addr{spec.Address}, spec.Extra...) {
		e.byAddr[addr] = n
	}
	e.mu.Unlock()

	if err := n.powerOn(); err != nil {
		return nil, err
	}

	return n, nil
}

// Nodes lists the nodes in the order they were added.
func (e *Emulator) Nodes() []*Node {
	e.mu.Lock()
	defer e.mu.Unlock()

	return slices.Clone(e.nodes)
}

// Node finds a node by name or address.
func (e *Emulator) Node(nameOrAddress string) (*Node, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()

	for _, n := range e.nodes {
		if n.name == nameOrAddress || n.addr.String() == nameOrAddress {
			return n, true
		}
	}

	return nil, false
}

// nodeByAddr finds a node by any of its addresses (what "node"/"nodes" metadata name).
func (e *Emulator) nodeByAddr(target string) (*Node, bool) {
	addr, err := netip.ParseAddr(target)
	if err != nil {
		return nil, false
	}

	e.mu.Lock()
	defer e.mu.Unlock()

	n, ok := e.byAddr[addr]

	return n, ok
}

// cluster returns the cluster with this ID, creating it on first use.
func (e *Emulator) cluster(id, name string) *Cluster {
	e.mu.Lock()
	defer e.mu.Unlock()

	c, ok := e.clusters[id]
	if !ok {
		c = newCluster(e, id, name)
		e.clusters[id] = c
	}

	return c
}

// clusterNodes lists the nodes whose current config belongs to the cluster.
func (e *Emulator) clusterNodes(c *Cluster) []*Node {
	var members []*Node

	for _, n := range e.Nodes() {
		if n.currentCluster() == c {
			members = append(members, n)
		}
	}

	return members
}

// issuingCA finds the OS CA with its key for a config: its own (control planes), else that of
// any control plane config in the emulator with the same CA certificate (trustd's role).
func (e *Emulator) issuingCA(cfg config.Provider) *x509.PEMEncodedCertificateAndKey {
	own := cfg.Machine().Security().IssuingCA()
	if own == nil {
		return nil
	}

	if len(own.Key) > 0 {
		return own
	}

	for _, n := range e.Nodes() {
		other := n.config()
		if other == nil {
			continue
		}

		if ca := other.Machine().Security().IssuingCA(); ca != nil && len(ca.Key) > 0 && bytes.Equal(ca.Crt, own.Crt) {
			return ca
		}
	}

	return nil
}

// after runs f once after d unless the emulator stops first; every timer of the emulator goes
// through here, so Stop leaves nothing running.
func (e *Emulator) after(d time.Duration, f func()) {
	e.wg.Add(1)

	go func() {
		defer e.wg.Done()

		timer := time.NewTimer(d)
		defer timer.Stop()

		select {
		case <-e.ctx.Done():
		case <-timer.C:
			f()
		}
	}()
}

// Stop powers every node off and closes every listener.
func (e *Emulator) Stop() {
	e.cancel()

	for _, n := range e.Nodes() {
		n.powerOff("emulator stopping")
	}

	e.mu.Lock()
	clusters := make([]*Cluster, 0, len(e.clusters))

	for _, c := range e.clusters {
		clusters = append(clusters, c)
	}
	e.mu.Unlock()

	for _, c := range clusters {
		c.close()
	}

	e.wg.Wait()
}
