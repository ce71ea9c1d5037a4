package emulator

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// The emulated etcd's upkeep figures: what `talosctl etcd status` shows (database size, the part in
// use, the leader, the raft index) and what a defragmentation changes. etcd's database file (bbolt)
// only grows: every write takes new pages and frees old ones inside the file; a defragmentation
// rewrites it without the free pages. The emulator derives the figures from the cluster's revision
// so that they grow with writes and stay deterministic:
//
//	in use  = etcdBaseInUse + revision × etcdInUsePerRevision          (the same on every member)
//	db size = the member's size at its last rewrite + revisions since × etcdDBPerRevision
//
// A member starts with a fragmented file (etcdFreshDBSize, as a member that has run a while); a
// defragmentation leaves it at the in-use size rounded up to bbolt's page.
const (
	// etcdVersion is the etcd Talos v1.13 runs (machinery constants.DefaultEtcdVersion v3.6.9); its
	// status reports its storage version too.
	etcdVersion        = "3.6.9"
	etcdStorageVersion = "3.6.0"

	etcdPageSize          = 4096
	etcdBaseInUse         = 4_734_976
	etcdInUsePerRevision  = 2048
	etcdDBPerRevision     = 8192
	etcdFreshDBSize       = 18_874_368
	etcdFirstRaftTerm     = 2
	etcdRaftIndexPerWrite = 1
)

// Defragmentation is one `etcd defrag` a member ran, as the control API reports it (in order).
type Defragmentation struct {
	Hostname string    `json:"hostname"`
	MemberID string    `json:"memberID"`
	At       time.Time `json:"at"`
	// DBSizeBefore and DBSizeAfter are the member's database file before and after, in bytes.
	DBSizeBefore int64 `json:"dbSizeBefore"`
	DBSizeAfter  int64 `json:"dbSizeAfter"`
}

// etcdUpkeep is the cluster-wide part of the figures: the leader, the raft term and index beyond
// the writes, and the defragmentations done.
type etcdUpkeep struct {
	leader uint64
	term   uint64
	// raftExtra counts raft entries that are not key writes (elections, membership changes).
	raftExtra uint64
	defrags   []Defragmentation
}

// memberSize is one member's database file: its size when it was last (re)written and the revision
// then.
type memberSize struct {
	dbSize     int64
	atRevision int64
}

func roundUpToPage(n int64) int64 {
	return (n + etcdPageSize - 1) / etcdPageSize * etcdPageSize
}

func (e *etcdCluster) inUse() int64 {
	return etcdBaseInUse + e.store.revision*etcdInUsePerRevision
}

// dbSize is a member's database file now; a member seen for the first time gets a fresh file.
func (e *etcdCluster) dbSize(id uint64) int64 {
	if e.sizes == nil {
		e.sizes = map[uint64]memberSize{}
	}

	s, ok := e.sizes[id]
	if !ok {
		s = memberSize{dbSize: etcdFreshDBSize, atRevision: e.store.revision}
		e.sizes[id] = s
	}

	return max(s.dbSize+(e.store.revision-s.atRevision)*etcdDBPerRevision, roundUpToPage(e.inUse()))
}

// currentLeader is the member etcd's voters follow: the last leader while it is up, else (an
// election) the first voting member that is up; none without quorum.
func (e *etcdCluster) currentLeader(up func(netip.Addr) bool) uint64 {
	if !e.hasQuorum(up) {
		return 0
	}

	if m, ok := e.memberByID(e.upkeep.leader); ok && !m.learner && up(m.addr) {
		return m.id
	}

	for _, m := range e.sortedMembers() {
		if !m.learner && up(m.addr) {
			e.elect(m.id)

			return m.id
		}
	}

	return 0
}

func (e *etcdCluster) elect(id uint64) {
	if e.upkeep.term == 0 {
		e.upkeep.term = etcdFirstRaftTerm - 1
	}

	e.upkeep.leader = id
	e.upkeep.term++
	e.upkeep.raftExtra++
}

func (e *etcdCluster) raftIndex() uint64 {
	return uint64(e.store.revision)*etcdRaftIndexPerWrite + e.upkeep.raftExtra + uint64(len(e.members))
}

// memberAlarms are the active alarms (etcd keeps them cluster-wide): NOSPACE of every member whose
// node has the EtcdNoSpace fault.
func (c *Cluster) memberAlarms() []*etcdserverpb.AlarmMember {
	var alarms []*etcdserverpb.AlarmMember

	for _, n := range c.emu.clusterNodes(c) {
		if !n.Faults().EtcdNoSpace {
			continue
		}

		if m, ok := c.memberOf(n.addr); ok {
			alarms = append(alarms, &etcdserverpb.AlarmMember{MemberID: m.id, Alarm: etcdserverpb.AlarmType_NOSPACE})
		}
	}

	return alarms
}

// memberStatus is what etcd's Status answers for one member (etcd's maintenance server: the leader
// it sees, an "etcdserver: no leader" error without one, every active alarm as an error).
func (c *Cluster) memberStatus(addr netip.Addr) (*machine.EtcdMemberStatus, error) {
	alarms := c.memberAlarms()
	views := c.views()

	c.mu.Lock()
	defer c.mu.Unlock()

	m, ok := c.etcd.member(addr)
	if !ok {
		return nil, status.Error(codes.FailedPrecondition, "failed to create etcd client: etcd is not running on this node")
	}

	st := &machine.EtcdMemberStatus{
		MemberId:         m.id,
		ProtocolVersion:  etcdVersion,
		StorageVersion:   etcdStorageVersion,
		DbSize:           c.etcd.dbSize(m.id),
		DbSizeInUse:      c.etcd.inUse(),
		Leader:           c.etcd.currentLeader(etcdUp(views)),
		RaftIndex:        c.etcd.raftIndex(),
		RaftTerm:         c.etcd.upkeep.term,
		RaftAppliedIndex: c.etcd.raftIndex(),
		IsLearner:        m.learner,
	}

	if st.Leader == 0 {
		st.Errors = append(st.Errors, rpctypes.ErrNoLeader.Error())
	}

	for _, a := range alarms {
		st.Errors = append(st.Errors, a.String())
	}

	return st, nil
}

// defragment rewrites a member's database file without its free pages, and records it.
func (c *Cluster) defragment(n *Node) (Defragmentation, error) {
	c.mu.Lock()
	defer c.mu.Unlock()

	m, ok := c.etcd.member(n.addr)
	if !ok {
		return Defragmentation{}, status.Error(codes.FailedPrecondition, "failed to create etcd client: etcd is not running on this node")
	}

	before := c.etcd.dbSize(m.id)
	after := roundUpToPage(c.etcd.inUse())
	c.etcd.sizes[m.id] = memberSize{dbSize: after, atRevision: c.etcd.store.revision}

	d := Defragmentation{Hostname: m.hostname, MemberID: fmt.Sprintf("%016x", m.id), At: time.Now().UTC(), DBSizeBefore: before, DBSizeAfter: after}
	c.etcd.upkeep.defrags = append(c.etcd.upkeep.defrags, d)

	return d, nil
}

// forfeitLeadership moves the leadership from a node's member to the first other voting member that
// is up, as Talos' etcd client does (internal/pkg/etcd ForfeitLeadership); it returns the new
// leader's name, or "" when the member did not lead.
func (c *Cluster) forfeitLeadership(n *Node) (string, error) {
	views := c.views()

	c.mu.Lock()
	defer c.mu.Unlock()

	if len(c.etcd.members) == 1 {
		return "", errors.New("cannot forfeit leadership, only one member")
	}

	up := etcdUp(views)

	m, ok := c.etcd.member(n.addr)
	if !ok || c.etcd.currentLeader(up) != m.id {
		return "", nil
	}

	for _, other := range c.etcd.sortedMembers() {
		if other.id != m.id && !other.learner && up(other.addr) {
			c.etcd.elect(other.id)

			return other.hostname, nil
		}
	}

	return "", nil
}

// EtcdStatus is etcd's status of the node's own member (talosctl etcd status).
func (s *machineService) EtcdStatus(_ context.Context, _ *emptypb.Empty) (*machine.EtcdStatusResponse, error) {
	cl, err := s.node.etcdMember("etcd status")
	if err != nil {
		return nil, err
	}

	st, err := cl.memberStatus(s.node.addr)
	if err != nil {
		return nil, err
	}

	return &machine.EtcdStatusResponse{Messages: []*machine.EtcdStatus{{MemberStatus: st}}}, nil
}

// EtcdAlarmList lists the cluster's active alarms (talosctl etcd alarm list).
func (s *machineService) EtcdAlarmList(_ context.Context, _ *emptypb.Empty) (*machine.EtcdAlarmListResponse, error) {
	cl, err := s.node.etcdMember("etcd alarm list")
	if err != nil {
		return nil, err
	}

	var alarms []*machine.EtcdMemberAlarm

	for _, a := range cl.memberAlarms() {
		alarms = append(alarms, &machine.EtcdMemberAlarm{MemberId: a.MemberID, Alarm: machine.EtcdMemberAlarm_NOSPACE})
	}

	return &machine.EtcdAlarmListResponse{Messages: []*machine.EtcdAlarm{{MemberAlarms: alarms}}}, nil
}

// EtcdDefragment defragments the node's own member (talosctl etcd defrag).
func (s *machineService) EtcdDefragment(_ context.Context, _ *emptypb.Empty) (*machine.EtcdDefragmentResponse, error) {
	cl, err := s.node.etcdMember("etcd defragment")
	if err != nil {
		return nil, err
	}

	d, err := cl.defragment(s.node)
	if err != nil {
		return nil, err
	}

	s.node.emu.log.Printf("%s: etcd defragmented, db %d → %d bytes", s.node.name, d.DBSizeBefore, d.DBSizeAfter)

	return &machine.EtcdDefragmentResponse{Messages: []*machine.EtcdDefragment{{}}}, nil
}
