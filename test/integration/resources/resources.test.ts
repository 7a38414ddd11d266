/** The resource endpoints' cases (workflows, triggers, customers and knowledge bases, webhook subscriptions, the typed client), one test file: test/helpers/cases.ts. */
import { runCases } from '../../helpers/cases';

runCases(__dirname);
