export {
  getHealth,
  getHealthOutput,
  GetHealthArgs,
  GetHealthOutputArgs,
  GetHealthResult,
} from "./getHealth";
export { Kubeconfig, KubeconfigArgs, KubeconfigState } from "./kubeconfig";
