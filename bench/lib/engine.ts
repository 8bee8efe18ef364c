/**
 * Every benchmark opens engines through here, so `cuzk-exporter bench --engine.library`
 * (or `node dist/bench/run.js --library PATH`) measures another library implementing the
 * ABI; the default is the reference engine built by `npm install`.
 */
import { EngineConfig, IngestOptions, NativeEngine } from '../../src/engine/sources/native/native-engine';

let libraryPath: string | undefined;

export function setLibraryPath(p: string | undefined): void {
  libraryPath = p;
}

export function openEngine(config: EngineConfig, ingest?: IngestOptions): NativeEngine {
  return NativeEngine.open(config, libraryPath, ingest);
}

/** The library set with setLibraryPath (undefined: the reference engine), for child processes. */
export function libraryPathInUse(): string | undefined {
  return libraryPath;
}
