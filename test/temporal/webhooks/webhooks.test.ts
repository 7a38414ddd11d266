/** The webhook delivery cases, one test file (test/helpers/cases.ts); the crash cases, which start processes, are files of their own. */
import { runCases } from '../../helpers/cases';

runCases(__dirname);
