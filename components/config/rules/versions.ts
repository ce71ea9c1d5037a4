// Talos and Kubernetes versions the program can run together, from Talos' support matrix
// (talos/versions.ts): a known Talos release line, a Kubernetes minor it supports, a config contract
// no newer than Talos itself nor than the provider's config generator.
import {
  compareMinor,
  GENERATOR_MACHINERY,
  minorOf,
  OLDEST_CONFIGURED,
  parseVersion,
  supportsKubernetes,
  talosRelease,
  TALOS_RELEASES,
} from "../../talos/versions";
import type { Rule } from "./rule";

const newest = TALOS_RELEASES[TALOS_RELEASES.length - 1].minor;
const releasesKnown = `${TALOS_RELEASES[0].minor} to ${newest}`;
/** Why a line older than OLDEST_CONFIGURED is refused (talos/versions.ts). */
const tooOld = `the configs this program generates use documents Talos ${OLDEST_CONFIGURED} introduced (HostnameConfig, LinkConfig, ...)`;

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
  if (compareMinor(release.minor, OLDEST_CONFIGURED) < 0) {
    problems.add(
      ["cluster", "talosVersion"],
      `Talos ${release.minor} is older than ${OLDEST_CONFIGURED}: ${tooOld}`,
      {
        got: cluster.talosVersion,
        hint: `Upgrade the nodes to Talos ${OLDEST_CONFIGURED} or newer with talosctl first, then set that version`,
      },
    );
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
    return;
  }
  if (contract && compareMinor(minorOf(contract), OLDEST_CONFIGURED) < 0) {
    problems.add(
      ["cluster", "configContract"],
      `is older than Talos ${OLDEST_CONFIGURED}: ${tooOld}`,
      {
        got: cluster.configContract,
        hint: `Use a contract from ${OLDEST_CONFIGURED} to ${GENERATOR_MACHINERY} (e.g. v${OLDEST_CONFIGURED}.0); a cluster created under an older one needs its nodes' configs regenerated`,
      },
    );
    return;
  }
  // Without a configContract the contract is talosVersion's, so a bump to a Talos the generator
  // does not know yet would move the contract there too.
  const effective = contract ? minorOf(contract) : release.minor;
  if (compareMinor(effective, GENERATOR_MACHINERY) > 0) {
    const problem = `Talos ${effective}'s config contract is not one the Talos provider's config generator knows (it is built on Talos machinery ${GENERATOR_MACHINERY}, which would generate ${GENERATOR_MACHINERY} configs under ${effective}'s name)`;
    const hint = `Pin cluster.configContract to the version the cluster was created with, ${GENERATOR_MACHINERY} or older, until the provider's generator supports ${effective}`;
    if (cluster.configContract !== undefined) {
      problems.add(["cluster", "configContract"], problem, { got: cluster.configContract, hint });
    } else {
      problems.add(
        ["cluster", "configContract"],
        `is not set, so it is cluster.talosVersion ${cluster.talosVersion}: ${problem}`,
        { hint },
      );
    }
  }
};
