package emulator

import (
	"crypto/rand"
	"encoding/binary"
	"net"
	"net/netip"
	"slices"
	"sort"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
)

// etcdMember is one member of a cluster's emulated etcd.
type etcdMember struct {
	id       uint64
	hostname string
	// addr identifies the member's node (its Talos API address); peer is what its etcd advertises.
	addr    netip.Addr
	peer    netip.Addr
	learner bool
}

func (m etcdMember) peerURL() string {
	return "https://" + net.JoinHostPort(m.advertised().String(), "2380")
}
func (m etcdMember) clientURL() string {
	return "https://" + net.JoinHostPort(m.advertised().String(), "2379")
}

// advertised is the address in its URLs: what the node's etcd advertises, else its API address.
func (m etcdMember) advertised() netip.Addr {
	if m.peer.IsValid() {
		return m.peer
	}

	return m.addr
}

func (m etcdMember) toProto() *machine.EtcdMember {
	return &machine.EtcdMember{
		Id:         m.id,
		Hostname:   m.hostname,
		PeerUrls:   []string{m.peerURL()},
		ClientUrls: []string{m.clientURL()},
		IsLearner:  m.learner,
	}
}

// etcdStore is the key space of a cluster's etcd: a revision counter and the keys written. It is
// what a snapshot carries and a recovery restores.
type etcdStore struct {
	revision int64
	keys     map[string]string
}

func newEtcdStore() etcdStore {
	return etcdStore{keys: map[string]string{}}
}

func (s *etcdStore) put(key, value string) {
	s.revision++
	s.keys[key] = value
}

func (s *etcdStore) clone() etcdStore {
	keys := make(map[string]string, len(s.keys))
	for k, v := range s.keys {
		keys[k] = v
	}

	return etcdStore{revision: s.revision, keys: keys}
}

// etcdCluster is a cluster's emulated etcd: whether it exists (bootstrapped), its members and data.
type etcdCluster struct {
	bootstrapped bool
	members      []etcdMember
	store        etcdStore
	// upkeep and sizes: the leader, raft figures, defragmentations and database files
	// (etcd_status.go).
	upkeep etcdUpkeep
	sizes  map[uint64]memberSize
}

func randomMemberID() uint64 {
	var b [8]byte

	_, _ = rand.Read(b[:]) //nolint:errcheck // crypto/rand does not fail

	return binary.BigEndian.Uint64(b[:]) | 1
}

func (e *etcdCluster) member(addr netip.Addr) (etcdMember, bool) {
	for _, m := range e.members {
		if m.addr == addr {
			return m, true
		}
	}

	return etcdMember{}, false
}

func (e *etcdCluster) memberByID(id uint64) (etcdMember, bool) {
	for _, m := range e.members {
		if m.id == id {
			return m, true
		}
	}

	return etcdMember{}, false
}

// add makes a node a member (a learner first when joining, as Talos does); a stale member with the
// same peer address is replaced.
func (e *etcdCluster) add(hostname string, addr, peer netip.Addr, learner bool) etcdMember {
	e.remove(addr)

	m := etcdMember{id: randomMemberID(), hostname: hostname, addr: addr, peer: peer, learner: learner}
	e.members = append(e.members, m)
	e.store.put("/talos-emulator/etcd/members/"+hostname, addr.String())

	return m
}

func (e *etcdCluster) promote(addr netip.Addr) {
	for i := range e.members {
		if e.members[i].addr == addr {
			e.members[i].learner = false
		}
	}
}

func (e *etcdCluster) remove(addr netip.Addr) bool {
	before := len(e.members)
	e.members = slices.DeleteFunc(e.members, func(m etcdMember) bool { return m.addr == addr })

	return len(e.members) != before
}

func (e *etcdCluster) removeID(id uint64) (etcdMember, bool) {
	m, ok := e.memberByID(id)
	if ok {
		e.remove(m.addr)
	}

	return m, ok
}

// voters are the members that count towards quorum.
func (e *etcdCluster) voters() []etcdMember {
	var voters []etcdMember

	for _, m := range e.members {
		if !m.learner {
			voters = append(voters, m)
		}
	}

	return voters
}

// hasQuorum reports whether more than half of the voting members are up.
func (e *etcdCluster) hasQuorum(up func(netip.Addr) bool) bool {
	voters := e.voters()
	healthy := 0

	for _, m := range voters {
		if up(m.addr) {
			healthy++
		}
	}

	return len(voters) > 0 && healthy > len(voters)/2
}

// sortedMembers lists the members in a stable order (by hostname) for responses.
func (e *etcdCluster) sortedMembers() []etcdMember {
	list := slices.Clone(e.members)
	sort.Slice(list, func(i, j int) bool { return list[i].hostname < list[j].hostname })

	return list
}

// reset forgets the etcd cluster: every member lost its data.
func (e *etcdCluster) reset() {
	e.bootstrapped = false
	e.members = nil
	e.store = newEtcdStore()
	// A new etcd elects its own leader and writes new files; the defragmentations stay on record.
	e.upkeep = etcdUpkeep{defrags: e.upkeep.defrags}
	e.sizes = nil
}
