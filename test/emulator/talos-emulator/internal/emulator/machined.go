package emulator

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	goruntime "runtime"
	"strings"
	"time"

	cosiapi "github.com/cosi-project/runtime/api/v1alpha1"
	cosiserver "github.com/cosi-project/runtime/pkg/state/protobuf/server"
	"github.com/google/uuid"
	"github.com/rs/xid"
	"github.com/siderolabs/talos/pkg/kubeconfig"
	clusterapi "github.com/siderolabs/talos/pkg/machinery/api/cluster"
	"github.com/siderolabs/talos/pkg/machinery/api/common"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/api/storage"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/role"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// maxRecoverSnapshot bounds an uploaded etcd snapshot (real ones are a few hundred MiB at most).
const maxRecoverSnapshot = 1 << 30

// registerServices registers the node's API services on its machined server.
func registerServices(s *grpc.Server, n *Node) {
	machine.RegisterMachineServiceServer(s, &machineService{node: n})
	machine.RegisterLifecycleServiceServer(s, &lifecycleService{node: n})
	machine.RegisterImageServiceServer(s, &imageService{node: n})
	storage.RegisterStorageServiceServer(s, &storageService{node: n})
	clusterapi.RegisterClusterServiceServer(s, &clusterService{node: n})
	cosiapi.RegisterStateServer(s, cosiserver.NewState(n.resources))
}

// machineService is machined's MachineService for one node.
type machineService struct {
	machine.UnimplementedMachineServiceServer

	node *Node
}

// ApplyConfiguration takes a config: in maintenance mode from anyone (the node installs and boots
// into it), afterwards from an admin, applied now, staged, or with a reboot, as Talos decides.
func (s *machineService) ApplyConfiguration(ctx context.Context, req *machine.ApplyConfigurationRequest) (*machine.ApplyConfigurationResponse, error) {
	n := s.node
	current := n.config()
	inMaintenance := current == nil

	if !inMaintenance && !rolesFromMetadata(ctx).Includes(role.Admin) {
		return nil, errNotAuthorized
	}

	provider, err := configloader.NewFromBytes(req.GetData())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}

	if !inMaintenance && provider.RawV1Alpha1() == nil {
		return nil, status.Error(codes.InvalidArgument, "the applied machine configuration doesn't contain v1alpha1 config, did you mean to patch the machine config instead?")
	}

	warnings, err := provider.Validate(validationMode{installed: !inMaintenance})
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}

	if provider.Machine().Security().IssuingCA() == nil {
		return nil, status.Error(codes.InvalidArgument, "the machine config has no OS CA (machine.ca)")
	}

	mode := req.GetMode()
	details := "Applied configuration with a reboot"
	modeName := mode.String()

	if inMaintenance && mode == machine.ApplyConfigurationRequest_REBOOT {
		mode = machine.ApplyConfigurationRequest_NO_REBOOT
	}

	//nolint:exhaustive
	switch mode {
	case machine.ApplyConfigurationRequest_TRY, machine.ApplyConfigurationRequest_NO_REBOOT:
		if !inMaintenance {
			if err = canApplyImmediate(current, provider); err != nil {
				return nil, status.Error(codes.InvalidArgument, err.Error())
			}
		}

		details = "Applied configuration without a reboot"
	case machine.ApplyConfigurationRequest_STAGED:
		details = "Staged configuration to be applied after the next reboot"
	case machine.ApplyConfigurationRequest_AUTO:
		if !inMaintenance && canApplyImmediate(current, provider) != nil {
			mode = machine.ApplyConfigurationRequest_REBOOT
			details = "Applied configuration with a reboot"
		} else {
			mode = machine.ApplyConfigurationRequest_NO_REBOOT
			details = "Applied configuration without a reboot"
		}

		modeName = fmt.Sprintf("%s(%s)", modeName, mode)
	}

	if req.GetDryRun() {
		diff, diffErr := dryRunDiff(current, provider)
		if diffErr != nil {
			return nil, diffErr
		}

		return &machine.ApplyConfigurationResponse{Messages: []*machine.ApplyConfiguration{{
			Mode:        mode,
			ModeDetails: fmt.Sprintf("Dry run summary:\n%s (skipped in dry-run).\n%s", details, diff),
		}}}, nil
	}

	n.emu.log.Printf("%s: apply config request: mode %s", n.name, modeName)

	if inMaintenance {
		if err = n.installFromMaintenance(provider); err != nil {
			return nil, err
		}
	} else if err = n.applyConfig(provider, mode, req.GetTryModeTimeout().AsDuration()); err != nil {
		return nil, err
	}

	return &machine.ApplyConfigurationResponse{Messages: []*machine.ApplyConfiguration{{
		Warnings:    warnings,
		Mode:        mode,
		ModeDetails: details,
	}}}, nil
}

// Bootstrap creates etcd on this control plane (once per cluster), or restores it from the snapshot
// uploaded with EtcdRecover.
func (s *machineService) Bootstrap(_ context.Context, req *machine.BootstrapRequest) (*machine.BootstrapResponse, error) {
	n := s.node

	if err := n.requireControlPlane("bootstrap"); err != nil {
		return nil, err
	}

	n.mu.Lock()
	phase := n.phase
	cl := n.cluster
	recoverData := n.recoverData
	n.mu.Unlock()

	if phase != PhaseRunning || cl == nil {
		return nil, status.Error(codes.FailedPrecondition, "bootstrap is not available yet")
	}

	var recovered *etcdStore

	if req.GetRecoverEtcd() {
		if recoverData == nil {
			return nil, status.Error(codes.FailedPrecondition, "etcd recovery requested, but no snapshot was uploaded (EtcdRecover)")
		}

		store, err := decodeSnapshot(recoverData, req.GetRecoverSkipHashCheck())
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "error recovering etcd from snapshot: %v", err)
		}

		recovered = &store
	}

	if err := cl.bootstrap(n, recovered); err != nil {
		return nil, err
	}

	n.mu.Lock()
	n.recoverData = nil
	n.mu.Unlock()

	return &machine.BootstrapResponse{Messages: []*machine.Bootstrap{{}}}, nil
}

// Kubeconfig streams the admin kubeconfig as a one-file .tar.gz, generated as Talos does.
func (s *machineService) Kubeconfig(_ *emptypb.Empty, srv grpc.ServerStreamingServer[common.Data]) error {
	n := s.node

	if err := n.requireControlPlane("kubeconfig"); err != nil {
		return err
	}

	var kc bytes.Buffer
	if err := kubeconfig.GenerateAdmin(n.config().Cluster(), &kc); err != nil {
		return err
	}

	var archive bytes.Buffer

	zw := gzip.NewWriter(&archive)
	tw := tar.NewWriter(zw)

	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "kubeconfig", Size: int64(kc.Len()), ModTime: time.Now(), Mode: 0o600}); err != nil {
		return err
	}

	if _, err := io.Copy(tw, &kc); err != nil {
		return err
	}

	if err := tw.Close(); err != nil {
		return err
	}

	if err := zw.Close(); err != nil {
		return err
	}

	return srv.Send(&common.Data{Bytes: archive.Bytes()})
}

// Version reports the Talos version the node runs.
func (s *machineService) Version(context.Context, *emptypb.Empty) (*machine.VersionResponse, error) {
	n := s.node

	n.mu.Lock()
	version := n.version
	configured := n.cfg != nil
	n.mu.Unlock()

	reply := &machine.Version{
		Version: &machine.VersionInfo{
			Tag:       version,
			Sha:       "emulated",
			GoVersion: goruntime.Version(),
			Os:        "linux",
			Arch:      "amd64",
		},
		Platform: &machine.PlatformInfo{Name: "metal", Mode: "metal"},
	}

	if configured {
		reply.Features = &machine.FeaturesInfo{Rbac: true}
	}

	return &machine.VersionResponse{Messages: []*machine.Version{reply}}, nil
}

// Hostname reports the node's hostname.
func (s *machineService) Hostname(context.Context, *emptypb.Empty) (*machine.HostnameResponse, error) {
	n := s.node

	hostname := "talos-" + strings.ReplaceAll(n.addr.String(), ".", "-")
	if cfg := n.config(); cfg != nil {
		hostname = hostnameOf(cfg, n.addr)
	}

	return &machine.HostnameResponse{Messages: []*machine.Hostname{{Hostname: hostname}}}, nil
}

// Memory reports 8 GiB, above the minimum the health check requires of every node type.
func (s *machineService) Memory(context.Context, *emptypb.Empty) (*machine.MemoryResponse, error) {
	const totalKiB = 8 << 20

	return &machine.MemoryResponse{Messages: []*machine.Memory{{
		Meminfo: &machine.MemInfo{Memtotal: totalKiB, Memfree: totalKiB / 2, Memavailable: totalKiB / 2},
	}}}, nil
}

// ServiceList lists the node's services.
func (s *machineService) ServiceList(context.Context, *emptypb.Empty) (*machine.ServiceListResponse, error) {
	n := s.node

	n.mu.Lock()
	services := n.services.sorted()

	list := make([]*machine.ServiceInfo, 0, len(services))
	for _, svc := range services {
		list = append(list, svc.toProto())
	}
	n.mu.Unlock()

	return &machine.ServiceListResponse{Messages: []*machine.ServiceList{{Services: list}}}, nil
}

// Events streams the runtime events of the current boot: a hello event, the requested history,
// then new events until the node goes down.
func (s *machineService) Events(req *machine.EventsRequest, srv grpc.ServerStreamingServer[machine.Event]) error {
	n := s.node

	n.mu.Lock()
	events := n.events
	n.mu.Unlock()

	if err := srv.Send(&machine.Event{Id: xid.New().String(), ActorId: req.GetWithActorId()}); err != nil {
		return err
	}

	backlog, ch, cancel := events.watch(watchOptions{
		tailEvents:  req.GetTailEvents(),
		tailID:      req.GetTailId(),
		tailSeconds: req.GetTailSeconds(),
		actorID:     req.GetWithActorId(),
	})
	defer cancel()

	for _, record := range backlog {
		if err := sendEvent(srv, record); err != nil {
			return err
		}
	}

	for {
		select {
		case <-srv.Context().Done():
			return srv.Context().Err()
		case record, ok := <-ch:
			if !ok {
				return status.Error(codes.Unavailable, "node is shutting down")
			}

			if req.GetWithActorId() != "" && record.actorID != req.GetWithActorId() {
				continue
			}

			if err := sendEvent(srv, record); err != nil {
				return err
			}
		}
	}
}

func sendEvent(srv grpc.ServerStreamingServer[machine.Event], record eventRecord) error {
	event, err := record.toProto()
	if err != nil {
		return err
	}

	return srv.Send(event)
}

// bootIDPath is the one file the emulator serves: talosctl reads it to see a reboot happen.
const bootIDPath = "/proc/sys/kernel/random/boot_id"

// Read serves the boot ID file.
func (s *machineService) Read(req *machine.ReadRequest, srv grpc.ServerStreamingServer[common.Data]) error {
	if req.GetPath() != bootIDPath {
		return status.Errorf(codes.NotFound, "stat %s: no such file or directory (the emulator serves only %s)", req.GetPath(), bootIDPath)
	}

	s.node.mu.Lock()
	bootID := s.node.bootID
	s.node.mu.Unlock()

	return srv.Send(&common.Data{Bytes: []byte(bootID + "\n")})
}

// Reboot reboots the node.
func (s *machineService) Reboot(_ context.Context, _ *machine.RebootRequest) (*machine.RebootResponse, error) {
	actorID := uuid.NewString()
	s.node.reboot(actorID, "reboot via API")

	return &machine.RebootResponse{Messages: []*machine.Reboot{{ActorId: actorID}}}, nil
}

// Shutdown powers the node off.
func (s *machineService) Shutdown(context.Context, *machine.ShutdownRequest) (*machine.ShutdownResponse, error) {
	actorID := uuid.NewString()
	n := s.node

	n.setStage(stageShuttingDown)
	n.publish(actorID, &machine.SequenceEvent{Sequence: "shutdown", Action: machine.SequenceEvent_START})
	n.emu.after(n.emu.opts.Timings.Services, func() { n.powerOff("shutdown via API") })

	return &machine.ShutdownResponse{Messages: []*machine.Shutdown{{ActorId: actorID}}}, nil
}

// Reset wipes the requested system partitions (or the whole system disk) and reboots or powers off.
func (s *machineService) Reset(_ context.Context, req *machine.ResetRequest) (*machine.ResetResponse, error) {
	for _, spec := range req.GetSystemPartitionsToWipe() {
		if spec.GetLabel() != "STATE" && spec.GetLabel() != "EPHEMERAL" {
			return nil, fmt.Errorf("failed to get volume status with label %q: resource not found", spec.GetLabel())
		}
	}

	if len(req.GetUserDisksToWipe()) > 0 {
		return nil, fmt.Errorf("reset user disk failed: device %s wasn't found", req.GetUserDisksToWipe()[0])
	}

	actorID := uuid.NewString()

	if err := s.node.reset(actorID, req); err != nil {
		return nil, err
	}

	return &machine.ResetResponse{Messages: []*machine.Reset{{ActorId: actorID}}}, nil
}

// Upgrade is the legacy (pre-1.13 API) upgrade: checks, acknowledges, then installs and reboots.
func (s *machineService) Upgrade(_ context.Context, req *machine.UpgradeRequest) (*machine.UpgradeResponse, error) { //nolint:staticcheck // the legacy API talosctl still calls for older nodes
	actorID := uuid.NewString()

	if err := s.node.upgradeLegacy(actorID, req.GetImage(), req.GetForce(), req.GetStage()); err != nil {
		return nil, err
	}

	return &machine.UpgradeResponse{Messages: []*machine.Upgrade{{Ack: "Upgrade request received", ActorId: actorID}}}, nil
}

// EtcdMemberList lists the members as this control plane's etcd sees them.
func (s *machineService) EtcdMemberList(_ context.Context, _ *machine.EtcdMemberListRequest) (*machine.EtcdMemberListResponse, error) {
	cl, err := s.node.etcdMember("etcd members")
	if err != nil {
		return nil, err
	}

	members := cl.members()

	list := make([]*machine.EtcdMember, 0, len(members))
	for _, m := range members {
		list = append(list, m.toProto())
	}

	return &machine.EtcdMemberListResponse{Messages: []*machine.EtcdMembers{{Members: list}}}, nil
}

// EtcdRemoveMemberByID removes another member (its node is gone).
func (s *machineService) EtcdRemoveMemberByID(_ context.Context, req *machine.EtcdRemoveMemberByIDRequest) (*machine.EtcdRemoveMemberByIDResponse, error) {
	cl, err := s.node.etcdMember("etcd remove-member")
	if err != nil {
		return nil, err
	}

	if err = cl.removeMember(req.GetMemberId()); err != nil {
		return nil, err
	}

	return &machine.EtcdRemoveMemberByIDResponse{Messages: []*machine.EtcdRemoveMemberByID{{}}}, nil
}

// EtcdLeaveCluster makes this node leave etcd.
func (s *machineService) EtcdLeaveCluster(_ context.Context, _ *machine.EtcdLeaveClusterRequest) (*machine.EtcdLeaveClusterResponse, error) {
	cl, err := s.node.etcdMember("etcd leave")
	if err != nil {
		return nil, err
	}

	if err = cl.leave(s.node); err != nil {
		return nil, err
	}

	return &machine.EtcdLeaveClusterResponse{Messages: []*machine.EtcdLeaveCluster{{}}}, nil
}

// EtcdForfeitLeadership hands etcd's leadership over (before the member leaves): to the first other
// voting member that is up, naming it; nothing when this member does not lead (etcd_status.go).
func (s *machineService) EtcdForfeitLeadership(_ context.Context, _ *machine.EtcdForfeitLeadershipRequest) (*machine.EtcdForfeitLeadershipResponse, error) {
	cl, err := s.node.etcdMember("etcd forfeit leadership")
	if err != nil {
		return nil, err
	}

	leader, err := cl.forfeitLeadership(s.node)
	if err != nil {
		return nil, fmt.Errorf("failed to forfeit leadership: %w", err)
	}

	return &machine.EtcdForfeitLeadershipResponse{Messages: []*machine.EtcdForfeitLeadership{{Member: leader}}}, nil
}

// EtcdSnapshot streams a consistent snapshot of etcd (a bbolt database with its SHA-256 appended).
func (s *machineService) EtcdSnapshot(_ *machine.EtcdSnapshotRequest, srv grpc.ServerStreamingServer[common.Data]) error {
	n := s.node

	cl, err := n.etcdMember("etcd snapshot")
	if err != nil {
		return err
	}

	if n.Faults().SnapshotFails {
		return status.Error(codes.Internal, "failed reading etcd snapshot: emulated fault: snapshot fails")
	}

	store, err := cl.snapshotStore()
	if err != nil {
		return err
	}

	data, err := encodeSnapshot(store)
	if err != nil {
		return err
	}

	const chunk = 64 << 10

	for len(data) > 0 {
		size := min(chunk, len(data))
		if err = srv.Send(&common.Data{Bytes: data[:size]}); err != nil {
			return err
		}

		data = data[size:]
	}

	return nil
}

// EtcdRecover receives the snapshot a following Bootstrap (recover_etcd) restores.
func (s *machineService) EtcdRecover(srv grpc.ClientStreamingServer[common.Data, machine.EtcdRecoverResponse]) error {
	n := s.node

	if err := n.requireControlPlane("etcd recover"); err != nil {
		return err
	}

	var buf bytes.Buffer

	for {
		msg, err := srv.Recv()
		if errors.Is(err, io.EOF) {
			break
		}

		if err != nil {
			return err
		}

		if buf.Len()+len(msg.GetBytes()) > maxRecoverSnapshot {
			return status.Error(codes.ResourceExhausted, "snapshot is larger than the emulator accepts (1 GiB)")
		}

		buf.Write(msg.GetBytes())
	}

	n.mu.Lock()
	n.recoverData = buf.Bytes()
	n.mu.Unlock()

	return srv.SendAndClose(&machine.EtcdRecoverResponse{Messages: []*machine.EtcdRecover{{}}})
}

// requireControlPlane fails like Talos on workers (and before a config exists).
func (n *Node) requireControlPlane(api string) error {
	cfg := n.config()
	if cfg == nil {
		return status.Errorf(codes.Unimplemented, "machine type is not set, cannot use %s API", api)
	}

	if !cfg.Machine().Type().IsControlPlane() {
		return status.Errorf(codes.Unimplemented, "%s is only available on control plane nodes", api)
	}

	return nil
}

// etcdMember returns the node's cluster if its etcd runs (the etcd APIs talk to the local member).
func (n *Node) etcdMember(api string) (*Cluster, error) {
	if err := n.requireControlPlane(api); err != nil {
		return nil, err
	}

	cl := n.currentCluster()
	if cl == nil {
		return nil, status.Error(codes.FailedPrecondition, "etcd is not running")
	}

	if _, ok := cl.memberOf(n.addr); !ok || !n.view().etcdData {
		return nil, status.Error(codes.FailedPrecondition, "failed to create etcd client: etcd is not running on this node")
	}

	return cl, nil
}
