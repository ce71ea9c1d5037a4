package emulator

import (
	"slices"
	"sort"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Service states as Talos reports them (internal/app/machined/pkg/system/events).
const (
	stateWaiting   = "Waiting"
	statePreparing = "Preparing"
	stateRunning   = "Running"
	stateFinished  = "Finished"
)

// maxServiceEvents bounds a service's event history (Talos keeps the last few too).
const maxServiceEvents = 30

// serviceStatus is one Talos system service of a node as ServiceList reports it.
type serviceStatus struct {
	id      string
	state   string
	healthy *bool // nil: the health is unknown (no check yet, or the service has none)
	message string
	events  []*machine.ServiceEvent
	changed time.Time
}

// serviceTable holds a node's services for one boot.
type serviceTable struct {
	services map[string]*serviceStatus
}

func newServiceTable() *serviceTable {
	return &serviceTable{services: map[string]*serviceStatus{}}
}

// set moves a service to a state (recording an event when state or message changed) and sets its
// health; healthy nil means unknown.
func (t *serviceTable) set(id, state, message string, healthy *bool) (changed bool) {
	svc, ok := t.services[id]
	if !ok {
		svc = &serviceStatus{id: id}
		t.services[id] = svc
	}

	now := time.Now()

	if svc.state != state || svc.message != message {
		svc.events = append(svc.events, &machine.ServiceEvent{Msg: message, State: state, Ts: timestamppb.New(now)})
		if len(svc.events) > maxServiceEvents {
			svc.events = svc.events[len(svc.events)-maxServiceEvents:]
		}

		changed = true
	}

	if !sameHealth(svc.healthy, healthy) {
		svc.changed = now
		changed = true
	}

	svc.state, svc.message, svc.healthy = state, message, healthy

	return changed
}

func (t *serviceTable) get(id string) (*serviceStatus, bool) {
	svc, ok := t.services[id]

	return svc, ok
}

// allHealthy reports whether every expected service runs and is healthy, and names the ones that
// are not (MachineStatus' unmet conditions).
func (t *serviceTable) allHealthy(expected []string) (bool, []string) {
	var unmet []string

	for _, id := range expected {
		svc, ok := t.services[id]
		if !ok || svc.state != stateRunning || (healthChecked(id) && (svc.healthy == nil || !*svc.healthy)) {
			unmet = append(unmet, id)
		}
	}

	return len(unmet) == 0, unmet
}

// expectedServices are the services a configured node runs once booted.
func expectedServices(controlPlane bool) []string {
	services := []string{"apid", "containerd", "cri", "kubelet", "machined", "syslogd", "udevd"}
	if controlPlane {
		services = append(services, "etcd", "trustd")
	}

	return services
}

func (t *serviceTable) sorted() []*serviceStatus {
	list := make([]*serviceStatus, 0, len(t.services))
	for _, svc := range t.services {
		list = append(list, svc)
	}

	sort.Slice(list, func(i, j int) bool { return list[i].id < list[j].id })

	return list
}

// toProto is the ServiceList entry of one service.
func (s *serviceStatus) toProto() *machine.ServiceInfo {
	health := &machine.ServiceHealth{Unknown: s.healthy == nil}
	if s.healthy != nil {
		health.Healthy = *s.healthy
		if !*s.healthy {
			health.LastMessage = s.message
		}

		health.LastChange = timestamppb.New(s.changed)
	}

	return &machine.ServiceInfo{
		Id:     s.id,
		State:  s.state,
		Events: &machine.ServiceEvents{Events: slices.Clone(s.events)},
		Health: health,
	}
}

// healthChecked lists the services Talos runs a health check for; the others report no health.
func healthChecked(id string) bool {
	switch id {
	case "apid", "etcd", "kubelet", "containerd", "cri", "trustd", "machined", "udevd", "syslogd", "auditd":
		return true
	default:
		return false
	}
}

func sameHealth(a, b *bool) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}

	return *a == *b
}

func boolPtr(v bool) *bool { return &v }
