// The bootstrap manifests and `talosctl upgrade-k8s`. Talos applies cluster.extraManifests,
// cluster.inlineManifests and its own (CoreDNS, kube-proxy, flannel, RBAC) when it bootstraps the
// cluster, and after that only creates objects that are missing (the ManifestApplyController skips
// every object its inventory lists). upgrade-k8s, as its last step, syncs them all: server-side apply
// with field ownership forced (fluxcd/pkg/ssa's ForceOwnership, field manager `talos`) and pruning of
// the objects whose manifests left the config (siderolabs/talos#5640). On a cluster handed to Flux
// that rolls back what Flux rolled forward (Flux itself, Cilium) until Flux reconciles again, and
// deletes what was taken out of the config. So the dry run's plan is read first: objects whose live
// version would be overwritten stop the upgrade unless the operator allows it, and the CLI never
// prunes (`--manifests-no-prune`).
import type { ManifestChange } from "./talosctlOutput";

/** The option that lets upgrade-k8s overwrite live objects with the config's manifests. */
export const ALLOW_MANIFEST_OVERWRITE = "--allow-manifest-overwrite";

/** How many lines of one object's diff are shown. */
const DIFF_LINES = 40;

/**
 * Whether this talosctl has `upgrade-k8s --manifests-no-prune`: added with the server-side apply
 * sync in v1.13.0 (cmd/talosctl/cmd/talos/upgrade-k8s.go; v1.12.11 has no manifest flags, and its
 * sync never prunes).
 */
export function supportsNoPrune(talosctlVersion: string | undefined): boolean {
  // A pre-release (`v1.14.0-alpha.1`) counts as its release line.
  const match = /^v?(\d+)\.(\d+)\./.exec(talosctlVersion ?? "");
  if (!match) return false;
  const [major, minor] = [Number(match[1]), Number(match[2])];
  return major > 1 || (major === 1 && minor >= 13);
}

/** The objects whose live version the sync would replace or delete. */
export function overwrites(changes: readonly ManifestChange[]): ManifestChange[] {
  return changes.filter((c) => c.action === "configured" || c.action === "pruned");
}

/**
 * The manifest step of a dry run for the operator: a count, then each object that would change
 * with (the start of) its diff; a Secret's diff is never shown (talosctl masks the values of a
 * changed Secret's `data`, not those of one it creates, nor any in the older sync's diffs).
 */
export function formatManifestPlan(changes: readonly ManifestChange[]): string[] {
  const count = (action: ManifestChange["action"]) =>
    changes.filter((c) => c.action === action).length;
  const lines = [
    `manifests: ${changes.length} objects; ${count("unchanged")} unchanged, ${count("created")} to create, ${count("configured")} to overwrite, ${count("pruned")} to delete`,
  ];
  for (const change of changes) {
    if (change.action === "unchanged") continue;
    lines.push(`  < ${change.action} ${change.subject}`);
    if (change.kind === "Secret") {
      lines.push("      (a Secret: its diff is not shown)");
      continue;
    }
    const diff = change.diff === "" ? [] : change.diff.split("\n");
    for (const line of diff.slice(0, DIFF_LINES)) lines.push(`      ${line}`);
    if (diff.length > DIFF_LINES) lines.push(`      … ${diff.length - DIFF_LINES} more lines`);
  }
  return lines;
}

/** The objects for a message: the first few, then how many more. */
export function listObjects(changes: readonly ManifestChange[], max = 6): string {
  const shown = changes.slice(0, max).map((c) => `${c.action} ${c.subject}`);
  return changes.length > max
    ? `${shown.join(", ")} and ${changes.length - max} more`
    : shown.join(", ");
}
