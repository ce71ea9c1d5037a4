// Talos and Kubernetes versions the program can run together, from Talos' support matrix
// (talos/versions.ts): a known Talos release line, a Kubernetes minor it supports, a config contract
// no newer than Talos itself.
import {
  compareMinor,
  minorOf,
  parseVersion,
  supportsKubernetes,
  talosRelease,
  TALOS_RELEASES,
} from "../../talos/versions";
import type { Rule } from "./rule";

const releasesKnown = `${TALOS_RELEASES[0].minor} to ${TALOS_RELEASES[TALOS_RELEASES.length - 1].minor}`;

/** The cluster's Talos, Kubernetes and config-contract versions fit together. */
export const versions: Rule = ({ cluster }, problems) => {
  // The schema refuses versions that do not parse.
  const talos = cluster && parseVersion(cluster.talosVersion);
  if (!cluster || !talos) return;
  const release = talosRelease(talos);
  if (!release) {
    problems.add(["cluster", "talosVersion"], `unknown Talos release line ${minorOf(talos)}`, {
      got: cluster.talosVersion,
      hint: `This program knows Talos ${releasesKnown}`,
    });
    return;
  }
  const kubernetes = parseVersion(cluster.kubernetesVersion);
  if (kubernetes && !supportsKubernetes(release, kubernetes)) {
    problems.add(
      ["cluster", "kubernetesVersion"],
      `Talos ${release.minor} does not support Kubernetes ${minorOf(kubernetes)}`,
      {
        got: cluster.kubernetesVersion,
        hint: `Use Kubernetes ${release.kubernetes.min} to ${release.kubernetes.max}, or another Talos version`,
      },
    );
  }
  const contract = cluster.configContract && parseVersion(cluster.configContract);
  if (contract && compareMinor(minorOf(contract), release.minor) > 0) {
    problems.add(["cluster", "configContract"], "is newer than cluster.talosVersion", {
      got: cluster.configContract,
      hint: `Use ${release.minor} or older`,
    });
  }
};
