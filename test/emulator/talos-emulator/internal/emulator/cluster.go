package emulator

import (
	"fmt"
	"net/netip"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Cluster is what the nodes of one Talos cluster (the same cluster ID in their configs) share: etcd,
// the Kubernetes node state (cordons) and the Kubernetes API on the cluster endpoint.
type Cluster struct {
	emu  *Emulator
	id   string
	name string

	mu       sync.Mutex
	etcd     etcdCluster
	joining  map[netip.Addr]bool
	cordoned map[string]bool
	kube     *kubeAPI
	// kubeWarned: the log already said the endpoint cannot be served.
	kubeWarned bool
}

func newCluster(e *Emulator, id, name string) *Cluster {
	return &Cluster{
		emu:      e,
		id:       id,
		name:     name,
		etcd:     etcdCluster{store: newEtcdStore()},
		joining:  map[netip.Addr]bool{},
		cordoned: map[string]bool{},
	}
}

func (c *Cluster) views() []view {
	nodes := c.emu.clusterNodes(c)
	views := make([]view, 0, len(nodes))

	for _, n := range nodes {
		views = append(views, n.view())
	}

	return views
}

// etcdUp reports whether a node's etcd member answers: the node runs, has its data and is healthy.
func etcdUp(views []view) func(netip.Addr) bool {
	return func(addr netip.Addr) bool {
		for _, v := range views {
			if v.addr == addr {
				return v.phase == PhaseRunning && v.etcdData && !v.unhealthy
			}
		}

		return false
	}
}

// reconcile brings every control plane's etcd service in line with the cluster: waiting for
// bootstrap, joining (learner, then promoted), running with or without quorum. It is called after
// anything that changes a node or etcd.
func (c *Cluster) reconcile() {
	views := c.views()

	c.mu.Lock()

	anyData := false

	for _, v := range views {
		if v.controlPlane && v.etcdData {
			anyData = true
		}
	}

	if c.etcd.bootstrapped && !anyData {
		c.emu.log.Printf("cluster %s: no control plane keeps etcd data; etcd is gone until a bootstrap (--recover-from)", c.name)
		c.etcd.reset()
	}

	up := etcdUp(views)
	quorum := c.etcd.hasQuorum(up)

	type update struct {
		node    *Node
		state   string
		message string
		healthy *bool
	}

	var updates []update

	for _, v := range views {
		// A node that left etcd keeps its etcd service stopped (Finished) until it boots again.
		if !v.controlPlane || v.phase != PhaseRunning || v.leftEtcd {
			continue
		}

		member, isMember := c.etcd.member(v.addr)

		switch {
		case !c.etcd.bootstrapped:
			updates = append(updates, update{v.node, statePreparing, "Running pre state", nil})
		case isMember && v.etcdData:
			switch {
			case v.unhealthy:
				updates = append(updates, update{v.node, stateRunning, "Health check failed: emulated fault: node unhealthy", boolPtr(false)})
			case !quorum:
				updates = append(updates, update{v.node, stateRunning, "Health check failed: etcdserver: request timed out (no quorum)", boolPtr(false)})
			default:
				updates = append(updates, update{v.node, stateRunning, "Health check successful", boolPtr(true)})
			}

			if member.learner {
				c.schedulePromotion(v.addr)
			}
		case v.etcdData:
			updates = append(updates, update{v.node, "Failed", "etcd member was removed from the cluster; wipe EPHEMERAL to rejoin", boolPtr(false)})
		case quorum:
			updates = append(updates, update{v.node, statePreparing, "Joining etcd cluster", nil})
			c.scheduleJoin(v.node, v.hostname, v.addr)
		default:
			updates = append(updates, update{v.node, statePreparing, "Waiting for etcd quorum to join", nil})
		}
	}

	c.ensureKubeAPI(views)
	c.mu.Unlock()

	for _, u := range updates {
		u.node.setService("etcd", u.state, u.message, u.healthy)
	}

	// Every node's view of the cluster (discovery members, static pods) follows the change.
	for _, v := range views {
		v.node.refreshResources()
	}
}

// scheduleJoin adds a control plane without etcd data as a learner after Timings.EtcdJoin.
func (c *Cluster) scheduleJoin(n *Node, hostname string, addr netip.Addr) {
	if c.joining[addr] {
		return
	}

	c.joining[addr] = true

	c.emu.after(c.emu.opts.Timings.EtcdJoin, func() {
		views := c.views()

		c.mu.Lock()
		delete(c.joining, addr)

		v, ok := findView(views, addr)
		if ok && v.phase == PhaseRunning && !v.etcdData && c.etcd.bootstrapped && c.etcd.hasQuorum(etcdUp(views)) {
			c.etcd.add(hostname, addr, v.etcdPeer, true)
			n.setEtcdData(true)
		}
		c.mu.Unlock()

		c.reconcile()
	})
}

// schedulePromotion promotes a learner to a voting member after Timings.EtcdJoin.
func (c *Cluster) schedulePromotion(addr netip.Addr) {
	c.emu.after(c.emu.opts.Timings.EtcdJoin, func() {
		c.mu.Lock()
		c.etcd.promote(addr)
		c.mu.Unlock()

		c.reconcile()
	})
}

func findView(views []view, addr netip.Addr) (view, bool) {
	for _, v := range views {
		if v.addr == addr {
			return v, true
		}
	}

	return view{}, false
}

// bootstrap creates the cluster's etcd on one control plane, empty or from a recovered snapshot.
func (c *Cluster) bootstrap(n *Node, recovered *etcdStore) error {
	v := n.view()

	c.mu.Lock()

	if v.etcdData || c.etcd.bootstrapped {
		c.mu.Unlock()

		return status.Error(codes.AlreadyExists, "etcd data directory is not empty")
	}

	c.etcd.bootstrapped = true

	if recovered != nil {
		c.etcd.store = recovered.clone()
		c.etcd.store.put("/talos-emulator/recovered-on", v.hostname)
	} else {
		c.etcd.store = newEtcdStore()
		c.etcd.store.put("/registry/namespaces/default", "{}")
		c.etcd.store.put("/registry/namespaces/kube-system", "{}")
		c.etcd.store.put("/talos-emulator/cluster", c.name)
	}

	c.etcd.add(v.hostname, v.addr, v.etcdPeer, false)
	n.setEtcdData(true)
	c.mu.Unlock()

	c.emu.log.Printf("cluster %s: etcd bootstrapped on %s (%s)", c.name, n.name, map[bool]string{true: "recovered from snapshot", false: "new"}[recovered != nil])
	c.reconcile()

	return nil
}

// members lists the etcd members as a control plane sees them.
func (c *Cluster) members() []etcdMember {
	c.mu.Lock()
	defer c.mu.Unlock()

	return c.etcd.sortedMembers()
}

// memberOf reports whether a node is an etcd member and the member.
func (c *Cluster) memberOf(addr netip.Addr) (etcdMember, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()

	return c.etcd.member(addr)
}

// quorumWithout reports whether etcd keeps quorum when one more member goes down (upgrade checks).
func (c *Cluster) quorumWithout(addr netip.Addr) error {
	views := c.views()

	c.mu.Lock()
	defer c.mu.Unlock()

	up := etcdUp(views)

	for _, m := range c.etcd.members {
		if m.addr != addr && !up(m.addr) {
			return fmt.Errorf("etcd member %s is not healthy; all members must be healthy to perform an upgrade", m.hostname)
		}
	}

	return nil
}

// leave removes a node's own member (it stops etcd and its data goes).
func (c *Cluster) leave(n *Node) error {
	views := c.views()

	c.mu.Lock()

	if !c.etcd.hasQuorum(etcdUp(views)) {
		c.mu.Unlock()

		return status.Error(codes.Unavailable, "etcdserver: request timed out (no quorum)")
	}

	if !c.etcd.remove(n.addr) {
		c.mu.Unlock()

		return status.Error(codes.FailedPrecondition, "node is not an etcd member")
	}

	c.etcd.store.put("/talos-emulator/etcd/left", n.addr.String())
	c.mu.Unlock()

	n.setEtcdData(false)
	n.setLeftEtcd()
	n.setService("etcd", stateFinished, "Service finished successfully", nil)
	c.reconcile()

	return nil
}

// removeMember removes a member by ID (its node is gone or will be wiped).
func (c *Cluster) removeMember(id uint64) error {
	views := c.views()

	c.mu.Lock()

	if !c.etcd.hasQuorum(etcdUp(views)) {
		c.mu.Unlock()

		return status.Error(codes.Unavailable, "etcdserver: request timed out (no quorum)")
	}

	if _, ok := c.etcd.removeID(id); !ok {
		c.mu.Unlock()

		return status.Errorf(codes.NotFound, "etcdserver: member not found: %x", id)
	}

	c.etcd.store.put("/talos-emulator/etcd/removed", fmt.Sprintf("%x", id))
	c.mu.Unlock()

	c.reconcile()

	return nil
}

// snapshotStore returns a copy of etcd's data for a snapshot, if etcd answers.
func (c *Cluster) snapshotStore() (etcdStore, error) {
	views := c.views()

	c.mu.Lock()
	defer c.mu.Unlock()

	if !c.etcd.bootstrapped {
		return etcdStore{}, status.Error(codes.FailedPrecondition, "etcd is not running (not bootstrapped)")
	}

	if !c.etcd.hasQuorum(etcdUp(views)) {
		return etcdStore{}, status.Error(codes.Unavailable, "etcdserver: request timed out (no quorum)")
	}

	return c.etcd.store.clone(), nil
}

// record writes a key into etcd (the emulated cluster's own bookkeeping), if etcd answers.
func (c *Cluster) record(key, value string) {
	c.mu.Lock()
	defer c.mu.Unlock()

	if c.etcd.bootstrapped {
		c.etcd.store.put(key, value)
	}
}

// kubernetesUp reports whether the control plane answers: etcd exists and has quorum.
func (c *Cluster) kubernetesUp() bool {
	views := c.views()

	c.mu.Lock()
	defer c.mu.Unlock()

	return c.etcd.bootstrapped && c.etcd.hasQuorum(etcdUp(views))
}

func (c *Cluster) close() {
	c.mu.Lock()
	kube := c.kube
	c.kube = nil
	c.mu.Unlock()

	if kube != nil {
		kube.close()
	}
}
