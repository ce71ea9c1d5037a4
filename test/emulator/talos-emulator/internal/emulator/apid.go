package emulator

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"

	xcrypto "github.com/siderolabs/crypto/x509"
	"github.com/siderolabs/grpc-proxy/proxy"
	"github.com/siderolabs/talos/pkg/machinery/api/common"
	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/constants"
	"github.com/siderolabs/talos/pkg/machinery/role"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/encoding/protowire"
	protoenc "google.golang.org/protobuf/proto"

	"talos-platform/test/emulator/talos-emulator/internal/pki"
)

// streamedMethods are the server-streaming methods; apid needs them to aggregate one-to-many calls
// (the list in internal/app/apid/service.go).
var streamedMethods = []string{
	"/machine.MachineService/Copy",
	"/machine.MachineService/DiskUsage",
	"/machine.MachineService/Dmesg",
	"/machine.MachineService/EtcdSnapshot",
	"/machine.MachineService/Events",
	"/machine.MachineService/ImageList",
	"/machine.MachineService/Kubeconfig",
	"/machine.MachineService/List",
	"/machine.MachineService/DebugContainer",
	"/machine.MachineService/Logs",
	"/machine.MachineService/PacketCapture",
	"/machine.MachineService/Read",
	"/machine.LifecycleService/Install",
	"/machine.LifecycleService/Upgrade",
	"/os.OSService/Dmesg",
	"/cluster.ClusterService/HealthCheck",
}

// oneToManyPrefixes are the services apid fans out to several nodes ("nodes" metadata).
var oneToManyPrefixes = []string{
	"/machine.MachineService/",
	"/cluster.ClusterService/",
	"/inspect.InspectService/",
	"/storage.StorageService/",
	"/time.TimeService/",
}

// nodeServer is what one boot of a node serves: apid on <address>:<port> (TLS, routing by the
// "node"/"nodes" metadata to this or another node) in front of machined (the API services, on an
// in-memory connection).
type nodeServer struct {
	node        *Node
	maintenance bool

	apid     *grpc.Server
	listener net.Listener

	machined     *grpc.Server
	machinedLis  *bufconn.Listener
	machinedConn *grpc.ClientConn

	stopOnce sync.Once

	// What a configured node's apid presents and trusts, rebuilt when a live apply changes the
	// config's CAs (a CA rotation: machine.ca, machine.acceptedCAs), as Talos' apid does.
	tlsMu    sync.Mutex
	tlsTrust string
	tls      *tls.Config
}

// startNodeServer starts the API of a node for its current boot; called with n.mu held, so it
// reads n's fields directly and calls nothing that locks n. signer is the OS CA (with its key).
func startNodeServer(n *Node, signer *xcrypto.PEMEncodedCertificateAndKey) (*nodeServer, error) {
	s := &nodeServer{node: n, maintenance: n.cfg == nil}

	tlsConfig, err := serverTLS(n, n.cfg, signer)
	if err != nil {
		return nil, err
	}

	if !s.maintenance {
		s.tls, s.tlsTrust = tlsConfig, trustOf(n.cfg)
		tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetConfigForClient: s.currentTLS}
	}

	s.machinedLis = bufconn.Listen(1 << 20)
	s.machined = grpc.NewServer(
		grpc.ChainUnaryInterceptor(authzUnary),
		grpc.ChainStreamInterceptor(authzStream),
		grpc.MaxRecvMsgSize(constants.GRPCMaxMessageSize),
	)
	registerServices(s.machined, n)

	go s.machined.Serve(s.machinedLis) //nolint:errcheck // ends with Stop

	s.machinedConn, err = grpc.NewClient("passthrough:///machined",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return s.machinedLis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(constants.GRPCMaxMessageSize), grpc.ForceCodecV2(proxy.Codec())),
	)
	if err != nil {
		s.machined.Stop()

		return nil, err
	}

	address := net.JoinHostPort(n.addr.String(), fmt.Sprint(n.emu.opts.APIPort))

	s.listener, err = net.Listen("tcp", address)
	if err != nil {
		s.machined.Stop()
		s.machinedConn.Close() //nolint:errcheck

		return nil, fmt.Errorf("listen on %s: %w", address, err)
	}

	director := &director{server: s}

	s.apid = grpc.NewServer(
		grpc.Creds(credentials.NewTLS(tlsConfig)),
		grpc.ForceServerCodecV2(proxy.Codec()),
		grpc.UnknownServiceHandler(proxy.TransparentHandler(director.direct, proxy.WithStreamedDetector(director.streamed))),
		grpc.ChainStreamInterceptor(s.injectRoles),
		grpc.MaxRecvMsgSize(constants.GRPCMaxMessageSize),
	)

	go s.apid.Serve(s.listener) //nolint:errcheck // ends with Stop

	return s, nil
}

// stop closes the listener and every connection: in-flight calls and streams fail, as on a reboot.
func (s *nodeServer) stop() {
	s.stopOnce.Do(func() {
		s.apid.Stop()
		s.machined.Stop()
		s.machinedConn.Close() //nolint:errcheck
	})
}

// serverTLS is the TLS config of apid: a self-signed certificate without client authentication in
// maintenance mode; otherwise a certificate from the OS CA and client certificates required, signed
// by that CA, carrying the client-auth usage.
func serverTLS(n *Node, cfg config.Provider, signer *xcrypto.PEMEncodedCertificateAndKey) (*tls.Config, error) {
	if cfg == nil {
		cert, err := pki.MaintenanceCertificate(n.addr)
		if err != nil {
			return nil, err
		}

		return &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.NoClientCert, MinVersion: tls.VersionTLS12}, nil
	}

	cert, err := pki.ServerCertificate(signer, n.addr, hostnameOf(cfg, n.addr), cfg.Machine().Security().CertSANs())
	if err != nil {
		return nil, err
	}

	pool, err := pki.CertPool(cfg.Machine().Security().IssuingCA().Crt)
	if err != nil {
		return nil, err
	}

	for _, accepted := range cfg.Machine().Security().AcceptedCAs() {
		pool.AppendCertsFromPEM(accepted.Crt)
	}

	return &tls.Config{
		Certificates:          []tls.Certificate{cert},
		ClientAuth:            tls.RequireAndVerifyClientCert,
		ClientCAs:             pool,
		MinVersion:            tls.VersionTLS12,
		VerifyPeerCertificate: verifyClientUsage,
	}, nil
}

// trustOf names what the API's TLS depends on in a config: the issuing CA, the accepted CAs and
// the certificate's names.
func trustOf(cfg config.Provider) string {
	security := cfg.Machine().Security()
	parts := []string{}

	if ca := security.IssuingCA(); ca != nil {
		parts = append(parts, string(ca.Crt))
	}

	for _, accepted := range security.AcceptedCAs() {
		parts = append(parts, string(accepted.Crt))
	}

	parts = append(parts, security.CertSANs()...)

	return strings.Join(parts, "\x00")
}

// currentTLS is the TLS config of the next handshake: the node's current config, re-issued when its
// CAs changed since the last one (a worker keeps its certificate until a control plane has the new
// CA's key, as trustd would make it wait).
func (s *nodeServer) currentTLS(*tls.ClientHelloInfo) (*tls.Config, error) {
	cfg := s.node.config()

	s.tlsMu.Lock()
	defer s.tlsMu.Unlock()

	if cfg == nil || trustOf(cfg) == s.tlsTrust {
		return s.tls, nil
	}

	signer := s.node.emu.issuingCA(cfg)
	if signer == nil {
		return s.tls, nil
	}

	next, err := serverTLS(s.node, cfg, signer)
	if err != nil {
		s.node.emu.log.Printf("%s: the API certificate cannot be re-issued: %v", s.node.name, err)

		return s.tls, nil
	}

	s.tls, s.tlsTrust = next, trustOf(cfg)
	s.node.emu.log.Printf("%s: the API certificate and trusted CAs follow the applied config", s.node.name)

	return s.tls, nil
}

// verifyClientUsage rejects client certificates without the client-auth usage, as apid does.
func verifyClientUsage(_ [][]byte, chains [][]*x509.Certificate) error {
	if len(chains) == 0 {
		return errors.New("no verified chains")
	}

	for _, cert := range chains[0] {
		if cert.IsCA {
			continue
		}

		if !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
			return fmt.Errorf("certificate %q is missing the client auth extended key usage", cert.Subject)
		}
	}

	return nil
}

// injectRoles derives the caller's roles: from the client certificate's organizations, or Reader
// for everyone in maintenance mode (Talos' read-only role mode).
func (s *nodeServer) injectRoles(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	roles := role.MakeSet(role.Reader)

	if !s.maintenance {
		roles = role.Zero

		if p, ok := peer.FromContext(ss.Context()); ok {
			if info, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(info.State.VerifiedChains) > 0 {
				roles, _ = role.Parse(info.State.VerifiedChains[0][0].Subject.Organization)
			}
		}
	}

	return handler(srv, &contextStream{ServerStream: ss, ctx: withRoles(ss.Context(), roles)})
}

type contextStream struct {
	grpc.ServerStream
	ctx context.Context //nolint:containedctx
}

func (c *contextStream) Context() context.Context { return c.ctx }

// director routes calls as apid's router does: no metadata → this node; "node" → that node;
// "nodes" → every listed node, responses aggregated with each node's address as hostname.
type director struct {
	server *nodeServer
}

func (d *director) streamed(fullMethodName string) bool {
	return slices.Contains(streamedMethods, fullMethodName) || strings.HasSuffix(fullMethodName, "Stream")
}

func (d *director) direct(ctx context.Context, fullMethodName string) (proxy.Mode, []proxy.Backend, error) {
	self := &backend{emu: d.server.node.emu, local: d.server}

	if d.server.maintenance {
		return proxy.One2One, []proxy.Backend{self}, nil
	}

	md, _ := metadata.FromIncomingContext(ctx)
	nodes, okNodes := md["nodes"]
	node, okNode := md["node"]

	if okNode && len(node) != 1 {
		return proxy.One2One, nil, status.Error(codes.InvalidArgument, "node metadata must be single-valued")
	}

	switch {
	case okNodes:
		if !slices.ContainsFunc(oneToManyPrefixes, func(prefix string) bool { return strings.HasPrefix(fullMethodName, prefix) }) {
			return proxy.One2One, nil, status.Errorf(codes.InvalidArgument, "one-2-many proxying is not supported for method %s", fullMethodName)
		}

		backends := make([]proxy.Backend, 0, len(nodes))
		for _, target := range nodes {
			backends = append(backends, &backend{emu: d.server.node.emu, target: target})
		}

		return proxy.One2Many, backends, nil
	case okNode:
		return proxy.One2One, []proxy.Backend{&backend{emu: d.server.node.emu, target: node[0]}}, nil
	default:
		return proxy.One2One, []proxy.Backend{self}, nil
	}
}

// backend is one target of a proxied call: this node's services (local) or another node's (as
// apid reaches another node's apid on port 50000; here the nodes live in one process).
type backend struct {
	emu    *Emulator
	local  *nodeServer
	target string
}

func (b *backend) String() string {
	if b.local != nil {
		return "machined"
	}

	return b.target
}

func (b *backend) GetConnection(ctx context.Context, _ string) (context.Context, *grpc.ClientConn, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	md = md.Copy()
	setRoleMetadata(md, rolesFromContext(ctx))

	server := b.local

	if server == nil {
		delete(md, "node")
		delete(md, "nodes")

		target, ok := b.emu.nodeByAddr(b.target)
		if !ok {
			return ctx, nil, status.Errorf(codes.Unavailable,
				"connection error: desc = \"transport: Error while dialing: dial tcp %s:%d: connect: connection refused\"", b.target, b.emu.opts.APIPort)
		}

		server = target.currentServer()
		if server == nil {
			return ctx, nil, status.Errorf(codes.Unavailable,
				"connection error: desc = \"transport: Error while dialing: dial tcp %s:%d: connect: connection refused\"", b.target, b.emu.opts.APIPort)
		}

		if server.maintenance {
			return ctx, nil, status.Error(codes.Unavailable,
				"connection error: desc = \"transport: authentication handshake failed: tls: failed to verify certificate: x509: certificate signed by unknown authority\"")
		}
	}

	return metadata.NewOutgoingContext(ctx, md), server.machinedConn, nil
}

// AppendInfo adds the target as metadata.hostname to each response, as apid does: a unary response
// is `repeated Reply messages = 1`, each Reply has `common.Metadata metadata = 1`.
func (b *backend) AppendInfo(streaming bool, resp []byte) ([]byte, error) {
	if b.local != nil {
		return resp, nil
	}

	payload, err := protoenc.Marshal(&common.Empty{Metadata: &common.Metadata{Hostname: b.target}})
	if err != nil {
		return nil, err
	}

	if streaming {
		return append(resp, payload...), nil
	}

	const (
		messagesField = 1
		bytesType     = 2
	)

	typ, n1 := protowire.ConsumeVarint(resp)
	if n1 < 0 {
		return nil, protowire.ParseError(n1)
	}

	_, n2 := protowire.ConsumeVarint(resp[n1:])
	if n2 < 0 {
		return nil, protowire.ParseError(n2)
	}

	if typ != (messagesField<<3)|bytesType {
		return nil, fmt.Errorf("unexpected message format: %d", typ)
	}

	body := resp[n1+n2:]
	prefix := protowire.AppendVarint(protowire.AppendVarint(nil, (messagesField<<3)|bytesType), uint64(len(body)+len(payload)))

	return slices.Concat(prefix, body, payload), nil
}

// BuildError turns a target's error into a response entry carrying metadata.error, as apid does.
func (b *backend) BuildError(streaming bool, err error) ([]byte, error) {
	if b.local != nil {
		return nil, nil
	}

	reply := &common.Empty{Metadata: &common.Metadata{Hostname: b.target, Error: err.Error(), Status: status.Convert(err).Proto()}}

	if streaming {
		return protoenc.Marshal(reply)
	}

	return protoenc.Marshal(&common.EmptyResponse{Messages: []*common.Empty{reply}})
}

// currentServer is the node's API of the current boot (nil while off).
func (n *Node) currentServer() *nodeServer {
	n.mu.Lock()
	defer n.mu.Unlock()

	return n.server
}
