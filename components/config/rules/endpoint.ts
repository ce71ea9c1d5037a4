// How the Kubernetes API is reached: a DNS name or IP (`cluster.endpoint`), or the VIP (vip.ts).
import type { Rule } from "./rule";

/** The cluster names an endpoint, or a VIP that serves as one. */
export const endpoint: Rule = ({ cluster }, problems) => {
  if (cluster && cluster.endpoint === undefined && cluster.vip === undefined) {
    problems.add(["cluster", "endpoint"], "required unless cluster.vip is set", {
      hint: "Give the Kubernetes API's DNS name or IP (e.g. api.staging.example.net), or a vip",
    });
  }
};
