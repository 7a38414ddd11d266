/** The worker's cases (its activities and workflows, trigger firing and its retries, secrets at rest, readiness against Temporal), one test file: test/helpers/cases.ts. */
import { runCases } from '../../helpers/cases';

runCases(__dirname);
