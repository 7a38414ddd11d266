/** The analytics cases (the API, the daily tier, hour edges, shards), one test file: test/helpers/cases.ts. */
import { runCases } from '../../helpers/cases';

runCases(__dirname);
