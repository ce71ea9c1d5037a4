// The talosctl recordings without Go: what the committed ones may hold, and what the recorder's
// comparison ignores and what it catches (record-talosctl.smoke.ts runs it against fresh output).
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { refuseSecrets, scrub, shapeOf } from "./talosctlRecorder";
import {
  RECORDINGS_DIR,
  type StoredRecording,
  recording,
  recordingNames,
  toStored,
} from "./talosctlRecordings";

describe("talosctl recordings", () => {
  it("hold no key material, no sandbox path and only the fixture's addresses", () => {
    const names = recordingNames();
    assert.ok(names.length > 20, "one recording per client call, and its failures");
    for (const name of names) {
      const text = fs.readFileSync(path.join(RECORDINGS_DIR, `${name}.json`), "utf8");
      for (const banned of [
        "PRIVATE KEY",
        "LS0tLS1CRUdJTi",
        "127.0.2.",
        "/tmp/talosctl-recording-",
      ])
        assert.ok(!text.includes(banned), `${name} holds ${banned}`);
    }
    assert.match(recording("get-machineconfig-v1alpha1").stdout, /key: REDACTED-|crt: REDACTED-/);
  });

  it("are scrubbed of the sandbox, the secrets and the emulated addresses, and refused with a secret left", () => {
    const secrets = new Map([["c2VjcmV0LXRva2Vu", "REDACTED-trustdinfo.token"]]);
    assert.equal(
      scrub(
        "token: c2VjcmV0LXRva2Vu at /tmp/talosctl-recording-x1/etcd.snapshot on 127.0.2.11",
        "/tmp/talosctl-recording-x1",
        secrets,
      ),
      "token: REDACTED-trustdinfo.token at /tmp/talosctl-recording/etcd.snapshot on 192.0.2.11",
    );
    const leaked = (stdout: string): StoredRecording => ({
      scenario: "",
      args: [],
      exitCode: 0,
      stdout: [stdout],
      stderr: [],
    });
    assert.throws(
      () => refuseSecrets("x", leaked("token: c2VjcmV0LXRva2Vu"), secrets),
      /talosctl recording x holds a secret \(REDACTED-trustdinfo\.token\); it was not written/,
    );
    assert.throws(() => refuseSecrets("x", leaked("key: LS0tLS1CRUdJTiBFQw=="), secrets), /secret/);
  });

  it("compare in shape: ids, times, sizes, build stamps and timing's progress lines aside", () => {
    const members = toStored(recording("etcd-members"));
    const otherIds = {
      ...members,
      stdout: members.stdout.map((line) => line.replace(/\b[0-9a-f]{16}\b/, "0123456789abcdef")),
    };
    assert.deepEqual(shapeOf(otherIds), shapeOf(members));
    const renamed = {
      ...members,
      stdout: members.stdout.map((l) => l.replace("PEER URLS", "PEERS")),
    };
    assert.notDeepEqual(shapeOf(renamed), shapeOf(members), "a renamed column is a change");

    const reboot = toStored(recording("reboot"));
    const retried = reboot.stderr.flatMap((line) =>
      line.endsWith("unavailable, retrying...") ? [line, line] : [line],
    );
    assert.deepEqual(shapeOf({ ...reboot, stderr: retried }), shapeOf(reboot));
    const dropped = {
      ...reboot,
      stderr: reboot.stderr.filter((l) => !/post check passed/.test(l)),
    };
    assert.notDeepEqual(shapeOf(dropped), shapeOf(reboot), "a missing progress line is a change");

    const service = toStored(recording("service-etcd"));
    const later = {
      ...service,
      stdout: service.stdout.map((l) => l.replace(/\(\w+ ago\)/, "(3m2s ago)")),
    };
    assert.deepEqual(shapeOf(later), shapeOf(service));
    const version = toStored(recording("version"));
    const rebuilt = {
      ...version,
      stdout: version.stdout.map((l) => l.replace(/go1\.\d+\.\d+/, "go1.27.0")),
    };
    assert.deepEqual(shapeOf(rebuilt), shapeOf(version));
  });
});
