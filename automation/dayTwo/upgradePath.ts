// Which version changes are allowed, from Talos' rules (the support table lives in
// components/talos/versions.ts and is reused, not copied): Talos moves one minor at a time and
// never down; Kubernetes moves one minor at a time and never down; the Talos release must support
// both the Kubernetes version the cluster runs and the one it goes to.
import type * as semver from "semver";
import {
  TALOS_RELEASES,
  compareMinor,
  minorOf,
  parseVersion,
  supportsKubernetes,
  talosRelease,
} from "../../components/talos/versions";
import { type Problem, formatProblem } from "../errors";

/** The verdict on one version change. */
export type StepVerdict =
  | { readonly ok: true; readonly change: "none" | "patch" | "minor"; readonly summary: string }
  | { readonly ok: false; readonly problem: Problem };

const KNOWN_TALOS = `${TALOS_RELEASES[0].minor} to ${TALOS_RELEASES[TALOS_RELEASES.length - 1].minor}`;

function unparsable(what: string, value: string, example: string): StepVerdict {
  return {
    ok: false,
    problem: {
      what,
      problem: `is not a version like ${example}`,
      got: JSON.stringify(value),
      fix: "Use MAJOR.MINOR.PATCH",
    },
  };
}

/** The Talos minors strictly after `from` up to and including `to` (`["1.13", "1.14"]`). */
function talosMinorsBetween(from: semver.SemVer, to: semver.SemVer): string[] {
  return TALOS_RELEASES.map((release) => release.minor).filter(
    (minor) => compareMinor(minor, minorOf(from)) > 0 && compareMinor(minor, minorOf(to)) <= 0,
  );
}

/**
 * Whether nodes on Talos `from` may go to `to` in one roll: the same line, or the next one when
 * `from` is at least that line's `upgradeFrom`. Anything longer is refused with the path to take.
 */
export function talosStep(from: string, to: string, env = "<env>"): StepVerdict {
  const a = parseVersion(from);
  const b = parseVersion(to);
  if (!a) return unparsable("Talos version the nodes run", from, "v1.13.9");
  if (!b) return unparsable("target Talos version", to, "v1.14.1");
  const target = talosRelease(b);
  if (!target) {
    return {
      ok: false,
      problem: {
        what: "target Talos version",
        problem: `belongs to no release line this program knows (${KNOWN_TALOS})`,
        got: `v${b.version}`,
        fix: "Add the line to components/talos/versions.ts first, or choose a known one",
      },
    };
  }
  const order = a.compare(b);
  if (order > 0) {
    return {
      ok: false,
      problem: {
        what: "Talos upgrade path",
        problem: "Talos is never moved down by this command",
        got: `v${a.version} → v${b.version}`,
        fix: "Choose a version at or above the one the nodes run (a failed upgrade rolls back by itself; `talosctl rollback` is the manual way)",
      },
    };
  }
  if (order === 0) return { ok: true, change: "none", summary: `v${a.version} (no change)` };
  const minors = talosMinorsBetween(a, b);
  if (a.major !== b.major || minors.length > 1) {
    const path = [`v${minorOf(a)}`, ...minors.slice(0, -1).map((m) => `v${m}.x`), `v${b.version}`];
    return {
      ok: false,
      problem: {
        what: "Talos upgrade path",
        problem: "Talos upgrades go through each minor in turn (the latest patch of each)",
        got: `v${a.version} → v${b.version}`,
        fix: `Upgrade in steps, ${path.join(" → ")}: first \`npm run platform -- upgrade talos ${env} --to v${minors[0]}.<latest patch>\``,
      },
    };
  }
  const floor = parseVersion(target.upgradeFrom)!;
  if (a.compare(floor) < 0) {
    return {
      ok: false,
      problem: {
        what: "Talos upgrade path",
        problem: `Talos ${target.minor} upgrades only from v${floor.version} or later`,
        got: `v${a.version}`,
        fix: `Upgrade to the latest v${minorOf(a)} patch first`,
      },
    };
  }
  return {
    ok: true,
    change: minors.length === 1 ? "minor" : "patch",
    summary: `v${a.version} → v${b.version}`,
  };
}

/** Whether Kubernetes may go from `from` to `to`: never down, one minor at a time. */
export function kubernetesStep(from: string, to: string): StepVerdict {
  const a = parseVersion(from);
  const b = parseVersion(to);
  if (!a) return unparsable("Kubernetes version the cluster runs", from, "1.36.3");
  if (!b) return unparsable("target Kubernetes version", to, "1.36.3");
  const order = a.compare(b);
  if (order > 0) {
    return {
      ok: false,
      problem: {
        what: "Kubernetes upgrade path",
        problem: "Kubernetes is never downgraded",
        got: `${a.version} → ${b.version}`,
        fix: `Keep kubernetesVersion at ${a.version} or above`,
      },
    };
  }
  if (order === 0) return { ok: true, change: "none", summary: `${a.version} (no change)` };
  const minorGap = b.major === a.major ? b.minor - a.minor : Number.POSITIVE_INFINITY;
  if (minorGap > 1) {
    return {
      ok: false,
      problem: {
        what: "Kubernetes upgrade path",
        problem: "Kubernetes moves one minor version at a time",
        got: `${a.version} → ${b.version}`,
        fix: `Upgrade to ${a.major}.${a.minor + 1}.<latest patch> first`,
      },
    };
  }
  return {
    ok: true,
    change: minorGap === 1 ? "minor" : "patch",
    summary: `${a.version} → ${b.version}`,
  };
}

/**
 * Whether one Talos version supports every listed Kubernetes version (the one the cluster runs and
 * the one it goes to: Talos is upgraded first, so it must run both).
 */
export function kubernetesSupported(talos: string, kubernetes: readonly string[]): StepVerdict {
  const t = parseVersion(talos);
  if (!t) return unparsable("Talos version", talos, "v1.13.9");
  const release = talosRelease(t);
  if (!release) {
    return {
      ok: false,
      problem: {
        what: "Talos version",
        problem: `belongs to no release line this program knows (${KNOWN_TALOS})`,
        got: `v${t.version}`,
        fix: "Add the line to components/talos/versions.ts first",
      },
    };
  }
  for (const value of kubernetes) {
    const k = parseVersion(value);
    if (!k) return unparsable("Kubernetes version", value, "1.36.3");
    if (!supportsKubernetes(release, k)) {
      return {
        ok: false,
        problem: {
          what: "Kubernetes support",
          problem: `Talos ${release.minor} supports Kubernetes ${release.kubernetes.min} to ${release.kubernetes.max} only`,
          got: k.version,
          fix: "Upgrade Talos first to a release that supports both the current and the target Kubernetes version",
        },
      };
    }
  }
  const list = [...new Set(kubernetes.map((v) => parseVersion(v)!.version))].join(" and ");
  return {
    ok: true,
    change: "none",
    summary: `Talos ${release.minor} supports Kubernetes ${list}`,
  };
}

/** The message of a failed verdict. */
export function verdictMessage(verdict: StepVerdict): string {
  return verdict.ok ? verdict.summary : formatProblem(verdict.problem);
}

/** Whether a talosctl client of `client` may drive nodes on `cluster`: its minor within one of theirs. */
export function talosctlCompatible(client: string, cluster: string): StepVerdict {
  const c = parseVersion(client.replace(/-.*$/, ""));
  const n = parseVersion(cluster);
  if (!c) return unparsable("talosctl version", client, "v1.13.9");
  if (!n) return unparsable("Talos version", cluster, "v1.13.9");
  const gap = c.major === n.major ? Math.abs(c.minor - n.minor) : Number.POSITIVE_INFINITY;
  if (gap > 1) {
    return {
      ok: false,
      problem: {
        what: "talosctl",
        problem: `its minor must be within one of the cluster's (Talos v${minorOf(n)})`,
        got: `v${c.version}`,
        fix: `Install talosctl v${minorOf(n)}: https://github.com/siderolabs/talos/releases/download/v${n.version}/talosctl-<os>-<arch>`,
      },
    };
  }
  return {
    ok: true,
    change: "none",
    summary: `talosctl v${c.version} works with Talos v${n.version}`,
  };
}
