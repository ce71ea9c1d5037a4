// The emulated Kubernetes API as kubectl's users reach it: a GET with a kubeconfig's credentials.
import * as https from "node:https";

/** The parts of a kubeconfig the test reads. */
export interface Kubeconfig {
  clusters: { cluster: { server: string; "certificate-authority-data": string } }[];
  users: { user: { "client-certificate-data": string; "client-key-data": string } }[];
}

/** GET on the Kubernetes API with a kubeconfig's admin credentials (verified TLS both ways). */
export function kubeGet(kubeconfig: Kubeconfig, route: string): Promise<unknown> {
  const { server, "certificate-authority-data": ca } = kubeconfig.clusters[0].cluster;
  const user = kubeconfig.users[0].user;
  const pem = (data: string) => Buffer.from(data, "base64");
  return new Promise((resolve, reject) => {
    const request = https.get(
      new URL(route, server),
      {
        ca: pem(ca),
        cert: pem(user["client-certificate-data"]),
        key: pem(user["client-key-data"]),
        timeout: 30_000,
      },
      (response) => {
        let body = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => (body += chunk));
        response.on("end", () =>
          response.statusCode === 200
            ? resolve(JSON.parse(body))
            : reject(new Error(`GET ${route}: ${response.statusCode} ${body}`)),
        );
      },
    );
    request.on("timeout", () => request.destroy(new Error(`GET ${route}: timed out`)));
    request.on("error", reject);
  });
}
