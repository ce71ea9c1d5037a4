// components/config/validate.ts: the phases together (parse, rules, normalise), one report of every
// problem, the error that names the stack file.
import fc from "fast-check";
import { strict as assert } from "node:assert";
import { validatePlatformConfig } from "../../components/config/validate";
import { mixedCluster, problemsOf, proxmoxCluster } from "../fixtures";
import { build, problems, shape } from "./arbitraryStack";

describe("stack config validation", () => {
  it("accepts the valid fixtures", () => {
    assert.deepEqual(
      problemsOf(proxmoxCluster, () => undefined),
      [],
    );
    assert.deepEqual(
      problemsOf(mixedCluster, () => undefined),
      [],
    );
  });

  it("accepts valid stacks of varied shapes", () => {
    fc.assert(
      fc.property(shape, (s) => {
        assert.deepEqual(problems(build(s)), []);
      }),
      { numRuns: 300 },
    );
  });

  it("reports every problem of every section at once", () => {
    const problems = problemsOf(proxmoxCluster, (v) => {
      v.nodes[0].proxmox.vmId = 5;
      v.nodes[1].name = "CP_2";
      v.cluster.kubernetesVersion = "1.20.0";
      v.nodes[2].proxmox.host = "pve7";
      v.proxmox.endpoint = "pve1";
    });
    assert.deepEqual(problems, [
      'proxmox.endpoint: expected an https:// URL of the Proxmox API; got "pve1"',
      "nodes[0].proxmox.vmId: Proxmox VM IDs start at 100; got 5",
      'nodes[1].name: expected a lowercase DNS label (letters, digits, hyphens; at most 63 characters); got "CP_2"',
      'cluster.kubernetesVersion: Talos 1.13 does not support Kubernetes 1.20; got "1.20.0". Use Kubernetes 1.31 to 1.36, or another Talos version',
    ]);
  });

  it("names the stack file and says nothing was created", () => {
    assert.throws(
      () => validatePlatformConfig({ ...proxmoxCluster(), nodes: [] }, "Pulumi.staging.yaml"),
      (error: Error) =>
        error.message.startsWith(
          "Pulumi.staging.yaml has 1 problem; nothing was created:\n  - nodes: ",
        ),
    );
  });

  it("a section that is not a mapping hides no problem of the others", () => {
    assert.deepEqual(
      problemsOf(proxmoxCluster, (v) => {
        v.proxmox = "pve1.example.net";
        v.nodes[1].name = "CP_2";
        v.nodes[2].patches = [{ machine: { kubelet: { extraArg: {} } } }];
      }),
      [
        'proxmox: expected a mapping; got "pve1.example.net"',
        'nodes[1].name: expected a lowercase DNS label (letters, digits, hyphens; at most 63 characters); got "CP_2"',
        "nodes[2].patches[0]: sets machine.kubelet.extraArg, which is not a Talos 1.13 setting. Did you mean machine.kubelet.extraArgs?",
      ],
    );
  });
});
