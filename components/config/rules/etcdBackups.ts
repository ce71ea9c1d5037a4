// Off-site etcd backups have somewhere to go: a destination given, or a gs:// state backend whose
// bucket they default to; a gs:// destination needs talos-platform:gcp (the job's service account
// and its HMAC key live in that project); a file:// one is a stand-in no in-cluster job can write to.
import { defaultDestination, parseDestination } from "../etcdBackups";
import type { Rule } from "./rule";

/** The backups' destination can be settled, and GCP is there when it is a bucket. */
export const etcdBackups: Rule = (
  { etcdBackups: backups, cluster, servicesGiven, raw },
  problems,
) => {
  if (!backups || !cluster?.name) return;
  const url = backups.destination ?? defaultDestination(raw.backend, cluster.name);
  if (url === undefined) {
    problems.add(
      ["etcdBackups", "destination"],
      "required: the state backend is not a gs:// bucket to default to",
      {
        got: raw.backend,
        hint: "Give gs://<bucket>/etcd/<cluster>/ (or file:///<folder> for a local stand-in)",
      },
    );
    return;
  }
  const destination = parseDestination(url);
  if (typeof destination === "string") return; // the schema reported it
  if (destination.kind === "gs" && !servicesGiven.has("gcp")) {
    problems.add(["etcdBackups"], `needs talos-platform:gcp for ${destination.url}`, {
      hint: "Add gcp.project and gcp.region: the job's service account and its HMAC key are created there",
    });
  }
  if (destination.kind === "file") {
    problems.warn(
      ["etcdBackups", "destination"],
      "is a file:// folder: only the CLI (etcd snapshot --upload) writes there; no in-cluster job is delivered",
      { got: destination.url },
    );
  }
};
