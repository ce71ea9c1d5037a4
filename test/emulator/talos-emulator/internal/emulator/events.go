package emulator

import (
	"sync"
	"time"

	"github.com/rs/xid"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// maxEvents bounds one boot's event history (Talos keeps a fixed-size ring too).
const maxEvents = 1000

// eventRecord is one runtime event as machined emits it on MachineService.Events.
type eventRecord struct {
	id      xid.ID
	at      time.Time
	actorID string
	payload proto.Message
}

// toProto encodes the event the way Talos does: the payload in an Any whose type URL is
// "talos/runtime/" + the message's full name (talosctl decodes exactly that form).
func (e eventRecord) toProto() (*machine.Event, error) {
	event := &machine.Event{Id: e.id.String(), ActorId: e.actorID}

	if e.payload == nil {
		return event, nil
	}

	value, err := proto.Marshal(e.payload)
	if err != nil {
		return nil, err
	}

	event.Data = &anypb.Any{
		TypeUrl: "talos/runtime/" + string(e.payload.ProtoReflect().Descriptor().FullName()),
		Value:   value,
	}

	return event, nil
}

// eventLog is the event history of one boot of a node. A reboot starts a new log, as Talos' event
// buffer lives in memory; closing the log ends every watch (the stream breaks, as on a real reboot).
type eventLog struct {
	mu       sync.Mutex
	events   []eventRecord
	watchers map[chan eventRecord]struct{}
	closed   bool
}

func newEventLog() *eventLog {
	return &eventLog{watchers: map[chan eventRecord]struct{}{}}
}

// publish appends an event and hands it to every watcher; a watcher too slow to take it is dropped.
func (l *eventLog) publish(actorID string, payload proto.Message) {
	l.mu.Lock()
	defer l.mu.Unlock()

	if l.closed {
		return
	}

	record := eventRecord{id: xid.New(), at: time.Now(), actorID: actorID, payload: payload}

	l.events = append(l.events, record)
	if len(l.events) > maxEvents {
		l.events = l.events[len(l.events)-maxEvents:]
	}

	for ch := range l.watchers {
		select {
		case ch <- record:
		default:
			delete(l.watchers, ch)
			close(ch)
		}
	}
}

// watchOptions select the history a watch starts with, as EventsRequest does.
type watchOptions struct {
	tailEvents  int32
	tailID      string
	tailSeconds int32
	actorID     string
}

// watch returns the requested history and a channel of the events that follow; the channel closes
// when the log closes (reboot) or the watcher falls behind. cancel stops the watch.
func (l *eventLog) watch(opts watchOptions) (backlog []eventRecord, ch chan eventRecord, cancel func()) {
	l.mu.Lock()
	defer l.mu.Unlock()

	switch {
	case opts.tailEvents < 0:
		backlog = append(backlog, l.events...)
	case opts.tailEvents > 0:
		from := max(len(l.events)-int(opts.tailEvents), 0)
		backlog = append(backlog, l.events[from:]...)
	case opts.tailID != "":
		for i, event := range l.events {
			if event.id.String() == opts.tailID {
				backlog = append(backlog, l.events[i+1:]...)

				break
			}
		}
	case opts.tailSeconds > 0:
		since := time.Now().Add(-time.Duration(opts.tailSeconds) * time.Second)

		for _, event := range l.events {
			if !event.at.Before(since) {
				backlog = append(backlog, event)
			}
		}
	}

	if opts.actorID != "" {
		filtered := backlog[:0]

		for _, event := range backlog {
			if event.actorID == opts.actorID {
				filtered = append(filtered, event)
			}
		}

		backlog = filtered
	}

	ch = make(chan eventRecord, maxEvents)

	if l.closed {
		close(ch)

		return backlog, ch, func() {}
	}

	l.watchers[ch] = struct{}{}

	return backlog, ch, func() {
		l.mu.Lock()
		defer l.mu.Unlock()

		if _, ok := l.watchers[ch]; ok {
			delete(l.watchers, ch)
			close(ch)
		}
	}
}

// close ends every watch; later events are dropped.
func (l *eventLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()

	l.closed = true

	for ch := range l.watchers {
		delete(l.watchers, ch)
		close(ch)
	}
}
