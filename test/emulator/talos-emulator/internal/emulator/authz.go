package emulator

import (
	"context"

	configres "github.com/siderolabs/talos/pkg/machinery/resources/config"
	"github.com/siderolabs/talos/pkg/machinery/role"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// roleMetadataKey carries the caller's roles from the API front (apid) to the node's services, as
// Talos' authz middleware does; a caller's own value is dropped.
const roleMetadataKey = "talos-role"

// errNotAuthorized is Talos' authz error.
var errNotAuthorized = status.Error(codes.PermissionDenied, "not authorized")

// rules are the roles allowed per method, copied from machined's rules for the methods the
// emulator serves (internal/app/machined/pkg/system/services/machined.go); a method not listed is
// admin-only.
var rules = map[string]role.Set{
	"/cluster.ClusterService/HealthCheck":           role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/machine.ImageService/Pull":                    role.MakeSet(role.Admin, role.Operator),
	"/machine.ImageService/List":                    role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/machine.LifecycleService/Upgrade":             role.MakeSet(role.Admin),
	"/machine.MachineService/ApplyConfiguration":    role.MakeSet(role.Admin, role.Reader), // reader only in maintenance, checked in the handler
	"/machine.MachineService/Bootstrap":             role.MakeSet(role.Admin),
	"/machine.MachineService/EtcdLeaveCluster":      role.MakeSet(role.Admin),
	"/machine.MachineService/EtcdMemberList":        role.MakeSet(role.Admin, role.Operator, role.Reader, role.EtcdBackup),
	"/machine.MachineService/EtcdRecover":           role.MakeSet(role.Admin),
	"/machine.MachineService/EtcdRemoveMemberByID":  role.MakeSet(role.Admin),
	"/machine.MachineService/EtcdSnapshot":          role.MakeSet(role.Admin, role.Operator, role.EtcdBackup),
	"/machine.MachineService/EtcdStatus":            role.MakeSet(role.Admin, role.Operator, role.Reader, role.EtcdBackup),
	"/machine.MachineService/EtcdAlarmList":         role.MakeSet(role.Admin, role.Operator, role.Reader, role.EtcdBackup),
	"/machine.MachineService/EtcdDefragment":        role.MakeSet(role.Admin, role.Operator),
	"/machine.MachineService/EtcdForfeitLeadership": role.MakeSet(role.Admin),
	"/machine.MachineService/Events":                role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/machine.MachineService/Hostname":              role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/machine.MachineService/Kubeconfig":            role.MakeSet(role.Admin),
	"/machine.MachineService/Memory":                role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/machine.MachineService/Read":                  role.MakeSet(role.Admin),
	"/machine.MachineService/Reboot":                role.MakeSet(role.Admin, role.Operator),
	"/machine.MachineService/Reset":                 role.MakeSet(role.Admin),
	"/machine.MachineService/ServiceList":           role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/machine.MachineService/Shutdown":              role.MakeSet(role.Admin, role.Operator),
	"/machine.MachineService/Upgrade":               role.MakeSet(role.Admin),
	"/machine.MachineService/Version":               role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/cosi.resource.State/Create":                   role.MakeSet(role.Admin),
	"/cosi.resource.State/Destroy":                  role.MakeSet(role.Admin),
	"/cosi.resource.State/Get":                      role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/cosi.resource.State/List":                     role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/cosi.resource.State/Update":                   role.MakeSet(role.Admin),
	"/cosi.resource.State/Watch":                    role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/storage.StorageService/Disks":                 role.MakeSet(role.Admin, role.Operator, role.Reader),
}

// rolesKey keeps the verified roles of a call in its context.
type rolesKey struct{}

func withRoles(ctx context.Context, roles role.Set) context.Context {
	return context.WithValue(ctx, rolesKey{}, roles)
}

// rolesFromContext returns the roles a call was authenticated with (none if unknown).
func rolesFromContext(ctx context.Context) role.Set {
	if roles, ok := ctx.Value(rolesKey{}).(role.Set); ok {
		return roles
	}

	return role.Zero
}

// rolesFromMetadata reads the roles the API front forwarded.
func rolesFromMetadata(ctx context.Context) role.Set {
	md, _ := metadata.FromIncomingContext(ctx)
	roles, _ := role.Parse(md.Get(roleMetadataKey))

	return roles
}

// setRoleMetadata puts the roles into outgoing metadata, replacing whatever the caller sent.
func setRoleMetadata(md metadata.MD, roles role.Set) {
	md.Delete(roleMetadataKey)

	for _, r := range roles.Strings() {
		md.Append(roleMetadataKey, r)
	}
}

func authorize(ctx context.Context, fullMethod string) error {
	allowed, ok := rules[fullMethod]
	if !ok {
		allowed = role.MakeSet(role.Admin)
	}

	if rolesFromMetadata(ctx).IncludesAny(allowed) {
		return nil
	}

	return errNotAuthorized
}

// authzUnary and authzStream enforce the rules in front of the node's services, and keep sensitive
// resources (the machine config) from non-admins as Talos does.
func authzUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := authorize(ctx, info.FullMethod); err != nil {
		return nil, err
	}

	if err := checkSensitive(ctx, req); err != nil {
		return nil, err
	}

	return handler(ctx, req)
}

func authzStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := authorize(ss.Context(), info.FullMethod); err != nil {
		return err
	}

	return handler(srv, &sensitiveStream{ServerStream: ss})
}

// typedRequest is a resource API request (Get, List, Watch) naming a resource type.
type typedRequest interface{ GetType() string }

// checkSensitive refuses a resource request for a sensitive type unless the caller is an admin.
func checkSensitive(ctx context.Context, req any) error {
	typed, ok := req.(typedRequest)
	if !ok {
		return nil
	}

	if typed.GetType() == configres.MachineConfigType && !rolesFromMetadata(ctx).Includes(role.Admin) {
		return errNotAuthorized
	}

	return nil
}

// sensitiveStream checks the request of a streaming resource call (List, Watch) as it arrives.
type sensitiveStream struct {
	grpc.ServerStream
}

func (s *sensitiveStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}

	return checkSensitive(s.Context(), m)
}
