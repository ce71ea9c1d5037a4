// Entry point of the app project (`npm run platform -- preview staging --layer app`).
import { appLayer } from "../components/app";

export = async () => appLayer();
