package emulator

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/siderolabs/talos/pkg/cluster"
	"github.com/siderolabs/talos/pkg/cluster/check"
	"github.com/siderolabs/talos/pkg/conditions"
	clusterapi "github.com/siderolabs/talos/pkg/machinery/api/cluster"
	"github.com/siderolabs/talos/pkg/machinery/client"
	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
	"github.com/siderolabs/talos/pkg/machinery/config/machine"
	clusterres "github.com/siderolabs/talos/pkg/machinery/resources/cluster"
	"google.golang.org/grpc"

	"talos-platform/test/emulator/talos-emulator/internal/pki"
)

// defaultHealthWait is talosctl health's default --wait-timeout, for callers that send none.
const defaultHealthWait = 20 * time.Minute

// clusterService serves the server-side cluster health check (`talosctl health`, whose --server
// flag defaults to true). Like machined, it runs Talos' own checks (pkg/cluster/check,
// DefaultClusterChecks) with a client of the node's own API: the same checks the provider's
// getHealth runs on the client side, here against the emulated APIs and Kubernetes API.
type clusterService struct {
	clusterapi.UnimplementedClusterServiceServer

	node *Node
}

// HealthCheck streams the checks' progress until all pass or the wait time-out ends.
func (s *clusterService) HealthCheck(req *clusterapi.HealthCheckRequest, srv grpc.ServerStreamingServer[clusterapi.HealthCheckProgress]) error {
	n := s.node

	if err := n.requireControlPlane("cluster health check"); err != nil {
		return err
	}

	osCA := n.config().Machine().Security().IssuingCA()

	cert, err := pki.AdminClientConfig(osCA)
	if err != nil {
		return err
	}

	endpoint := net.JoinHostPort(n.addr.String(), strconv.Itoa(n.emu.opts.APIPort))

	c, err := client.New(srv.Context(), client.WithConfig(clientconfig.NewConfig("local", []string{endpoint}, osCA.Crt, cert)))
	if err != nil {
		return err
	}

	clientProvider := &cluster.ConfigClientProvider{DefaultClient: c}
	defer clientProvider.Close() //nolint:errcheck

	k8sProvider := &cluster.KubernetesClient{ClientProvider: clientProvider, ForceEndpoint: req.GetClusterInfo().GetForceEndpoint()}
	defer k8sProvider.K8sClose() //nolint:errcheck

	waitTimeout := req.GetWaitTimeout().AsDuration()
	if waitTimeout <= 0 {
		waitTimeout = defaultHealthWait
	}

	ctx, cancel := context.WithTimeout(srv.Context(), waitTimeout)
	defer cancel()

	info, err := healthClusterInfo(ctx, c, req.GetClusterInfo())
	if err != nil {
		return err
	}

	var addresses []string
	for _, node := range info.Nodes() {
		addresses = append(addresses, node.InternalIP.String())
	}

	if err = srv.Send(&clusterapi.HealthCheckProgress{Message: fmt.Sprintf("discovered nodes: %q", addresses)}); err != nil {
		return err
	}

	state := struct {
		cluster.ClientProvider
		cluster.K8sProvider
		cluster.Info
	}{clientProvider, k8sProvider, info}

	return check.Wait(ctx, &state, append(check.DefaultClusterChecks(), check.ExtraClusterChecks()...), &progressReporter{srv: srv})
}

// healthClusterInfo is the node list: as given, else the discovery members (machined's order).
func healthClusterInfo(ctx context.Context, c *client.Client, given *clusterapi.ClusterInfo) (cluster.Info, error) {
	if len(given.GetControlPlaneNodes()) > 0 || len(given.GetWorkerNodes()) > 0 {
		controlPlanes, err := cluster.IPsToNodeInfos(given.GetControlPlaneNodes())
		if err != nil {
			return nil, err
		}

		workers, err := cluster.IPsToNodeInfos(given.GetWorkerNodes())
		if err != nil {
			return nil, err
		}

		return &nodeList{byType: map[machine.Type][]cluster.NodeInfo{
			machine.TypeControlPlane: controlPlanes,
			machine.TypeWorker:       workers,
		}, all: append(controlPlanes, workers...)}, nil
	}

	members, err := safe.StateListAll[*clusterres.Member](ctx, c.COSI)
	if err != nil {
		return nil, err
	}

	return check.NewDiscoveredClusterInfo(safe.ToSlice(members, func(m *clusterres.Member) *clusterres.Member { return m }))
}

type nodeList struct {
	byType map[machine.Type][]cluster.NodeInfo
	all    []cluster.NodeInfo
}

func (l *nodeList) Nodes() []cluster.NodeInfo                     { return l.all }
func (l *nodeList) NodesByType(t machine.Type) []cluster.NodeInfo { return l.byType[t] }

// progressReporter sends each new check state as one progress message, as machined does.
type progressReporter struct {
	srv      grpc.ServerStreamingServer[clusterapi.HealthCheckProgress]
	lastLine string
}

func (r *progressReporter) Update(condition conditions.Condition) {
	line := strings.TrimSpace(fmt.Sprintf("waiting for %s", condition))
	if line == r.lastLine {
		return
	}

	r.lastLine = line
	_ = r.srv.Send(&clusterapi.HealthCheckProgress{Message: line}) //nolint:errcheck // a gone client ends the stream anyway
}
