import { strict as assert } from "node:assert";
import {
  type InterruptSignal,
  Interrupts,
  SAME_INTERRUPT_MS,
  signalFromTerminal,
} from "../../automation/interrupts";

/** Interrupts over a fake process: a settable clock, a recorded stderr, exit and child stops. */
function fakeProcess(options: { fromTerminal?: boolean } = {}) {
  const state = { now: 1_000, written: "", exits: [] as number[], childStops: 0 };
  const interrupts = new Interrupts({
    now: () => state.now,
    fromTerminal: (signal: InterruptSignal) => signal === "SIGINT" && options.fromTerminal === true,
    write: (text) => {
      state.written += text;
    },
    stopChildren: () => {
      state.childStops++;
    },
    exit: (code) => {
      state.exits.push(code);
    },
  });
  return { interrupts, state };
}

describe("interrupts", () => {
  it("a Ctrl-C from the terminal stops after the step under way and does not ask the engine again", () => {
    const { interrupts, state } = fakeProcess({ fromTerminal: true });
    interrupts.begin("cp-2 is being upgraded", () => "cp-2 unverified");
    interrupts.receive("SIGINT");
    assert.equal(interrupts.stopping.aborted, true);
    // The Pulumi CLI got the same Ctrl-C (same process group); a second one would stop it at once.
    assert.equal(interrupts.engineCancel.aborted, false);
    assert.equal(interrupts.requested, true);
    assert.match(
      state.written,
      /SIGINT: stopping once the step under way has finished \(cp-2 is being upgraded\); send it again to stop at once/,
    );
    assert.deepEqual(state.exits, []);
  });

  it("a SIGINT from elsewhere (a CI runner) and any SIGTERM ask the engine to cancel", () => {
    const ci = fakeProcess({ fromTerminal: false });
    ci.interrupts.receive("SIGINT");
    assert.equal(ci.interrupts.engineCancel.aborted, true);
    const term = fakeProcess({ fromTerminal: true });
    term.interrupts.receive("SIGTERM");
    assert.equal(term.interrupts.engineCancel.aborted, true);
    assert.equal(term.interrupts.stopping.aborted, true);
  });

  it("the same signal again within a second is npm's forwarded copy, not a second interrupt", () => {
    const { interrupts, state } = fakeProcess({ fromTerminal: true });
    interrupts.begin("w-1 is being upgraded", () => "w-1 unverified");
    interrupts.receive("SIGINT");
    state.now += SAME_INTERRUPT_MS - 1;
    interrupts.receive("SIGINT");
    assert.deepEqual(state.exits, []);
    assert.doesNotMatch(state.written, /stopping now/);
  });

  it("a second interrupt reports every step under way, stops the child groups and exits 130", () => {
    const { interrupts, state } = fakeProcess({ fromTerminal: true });
    interrupts.begin(
      "cp-1 is being upgraded",
      () => "  unverified:  cp-1 (192.0.2.11): mid-upgrade",
    );
    const end = interrupts.begin("finished step", () => "must not be reported");
    end();
    interrupts.receive("SIGINT");
    state.now += SAME_INTERRUPT_MS + 1;
    interrupts.receive("SIGINT");
    assert.match(
      state.written,
      /SIGINT again: stopping now\n {2}unverified: {2}cp-1 \(192\.0\.2\.11\): mid-upgrade\n/,
    );
    assert.doesNotMatch(state.written, /must not be reported/);
    assert.equal(state.childStops, 1);
    assert.deepEqual(state.exits, [130]);
  });

  it("a different signal right after the first is a second interrupt (SIGTERM escalating a SIGINT)", () => {
    const { interrupts, state } = fakeProcess();
    interrupts.receive("SIGINT");
    interrupts.receive("SIGTERM");
    assert.deepEqual(state.exits, [130]);
  });

  it("never takes SIGTERM for a terminal's Ctrl-C", () => {
    assert.equal(signalFromTerminal("SIGTERM"), false);
  });
});
