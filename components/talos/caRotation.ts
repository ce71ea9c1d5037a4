// What a CA rotation (`rotate-ca`, docs/day-two.md#ca-rotation) means for each node's config and
// for the cluster's clients, phase by phase. Talos' own `talosctl rotate-ca` (pkg/rotate/pki) patches
// every node three times: the new CA added to the accepted CAs; the new CA made the issuing one
// (`machine.ca` / `cluster.ca`) with the old one accepted; the old one removed. Here the stack file
// records the phase (cluster.caRotation) and the program renders it, so the state's machine secrets
// and the exported talosconfig stay valid at every step. Pure: no resources.
import type { CaPhase, CaRotationRecord } from "../spec/types";

/** Which of the two CAs of a rotation: the one rotated from or the one rotated to. */
export type CaSide = "old" | "new";

/** What one node's config says of a CA: the one it issues from and those it also accepts. */
export interface NodeTrust {
  readonly issuing: CaSide;
  readonly accepted: readonly CaSide[];
}

const NODE_TRUST: Record<CaPhase, NodeTrust> = {
  // The new CA exists in the state only: the nodes' configs are unchanged.
  generated: { issuing: "old", accepted: [] },
  accepted: { issuing: "old", accepted: ["new"] },
  issuing: { issuing: "new", accepted: ["old"] },
  removed: { issuing: "new", accepted: [] },
};

const PREVIOUS: Record<CaPhase, CaPhase> = {
  generated: "generated",
  accepted: "generated",
  issuing: "accepted",
  removed: "issuing",
};

/** The phase a node's config is rendered for: a node the rolling phase has not reached yet is one behind. */
export function nodePhase(record: CaRotationRecord, node: string): CaPhase {
  return record.nodes === undefined || record.nodes.includes(node)
    ? record.phase
    : PREVIOUS[record.phase];
}

/** What a node's config trusts under the record (no record: its own CA only). */
export function nodeTrust(record: CaRotationRecord | undefined, node: string): NodeTrust {
  return record ? NODE_TRUST[nodePhase(record, node)] : NODE_TRUST.removed;
}

/**
 * What a client of the whole cluster (the talosconfig, the provider's own calls) needs: the CA
 * its certificate is signed by, and the CAs it verifies the nodes' server certificates with.
 * Until the new CA issues, the old credentials work everywhere (every node still issues from and
 * trusts the old CA). From the first node that issues from the new CA until the old one is
 * removed, a certificate of the new CA (accepted by every node since the phase before) and both
 * CAs for the servers (nodes issue from either). Once the old one is being removed, every node
 * issues from the new one, so only it is trusted: a client of the old CA fails against every node.
 */
export function clientTrust(record: CaRotationRecord | undefined): {
  readonly signedBy: CaSide;
  readonly servers: readonly CaSide[];
} {
  switch (record?.phase ?? "removed") {
    case "generated":
    case "accepted":
      return { signedBy: "old", servers: ["old"] };
    case "issuing":
      return { signedBy: "new", servers: ["new", "old"] };
    case "removed":
      return { signedBy: "new", servers: ["new"] };
  }
}

/** The CA generations the record needs in the state: the old one only until it left every node. */
export function generationsNeeded(record: CaRotationRecord | undefined): {
  readonly current: number;
  readonly old?: number;
} {
  if (!record) return { current: 0 };
  const done = record.phase === "removed" && record.nodes === undefined;
  return done
    ? { current: record.generation }
    : { current: record.generation, old: record.generation - 1 };
}

/** A step of a rotation: the record `up` applies next. */
export type RotationStep = CaRotationRecord;

/**
 * The steps from `record` to a finished rotation, node by node: `generated` once for the whole
 * cluster, then each later phase for one node at a time (control planes first: `nodes` is in roll
 * order), the last step of a phase with `nodes` dropped (every node). A record already finished
 * (or none) starts the next generation.
 */
export function rotationSteps(
  record: CaRotationRecord | undefined,
  nodes: readonly string[],
): RotationStep[] {
  const steps: RotationStep[] = [];
  let generation: number;
  let phases: CaPhase[];
  let reached: readonly string[] = [];
  if (!record || (record.phase === "removed" && record.nodes === undefined)) {
    generation = (record?.generation ?? 0) + 1;
    steps.push({ generation, phase: "generated" });
    phases = ["accepted", "issuing", "removed"];
  } else {
    generation = record.generation;
    const order: CaPhase[] = ["generated", "accepted", "issuing", "removed"];
    const at = order.indexOf(record.phase);
    if (record.nodes === undefined) {
      phases = order.slice(at + 1);
    } else {
      phases = order.slice(at);
      reached = record.nodes;
    }
  }
  for (const phase of phases) {
    const done = phase === phases[0] ? reached.filter((n) => nodes.includes(n)) : [];
    const left = nodes.filter((n) => !done.includes(n));
    for (let i = 1; i <= left.length; i++) {
      steps.push(
        i === left.length
          ? { generation, phase }
          : { generation, phase, nodes: [...done, ...left.slice(0, i)] },
      );
    }
    if (left.length === 0) steps.push({ generation, phase });
  }
  return steps;
}
