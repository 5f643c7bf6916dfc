/**
 * The guide's sidebar: the pages in reading order. The site's config shows it, and llms.txt lists the
 * pages in the same order (scripts/docs/llms.mjs), so it lives in plain JavaScript both can import.
 *
 * @type {import('vitepress').DefaultTheme.SidebarItem[]}
 */
export const guide = [
  {
    text: 'Introduction',
    items: [
      { text: 'Getting started', link: '/guide/getting-started' },
      { text: 'How a delivery is answered', link: '/guide/how-it-works' },
      { text: 'Handlers and types', link: '/guide/handlers-and-types' },
      { text: 'Validation with schemas', link: '/guide/validation' },
      { text: 'Options', link: '/guide/options' },
      { text: 'Ordering', link: '/guide/ordering' },
      { text: 'Status codes', link: '/guide/status-codes' },
      { text: 'Security', link: '/guide/security' },
      { text: 'Performance', link: '/guide/performance' },
    ],
  },
  {
    text: 'Frameworks and runtimes',
    items: [
      { text: 'Overview and slow senders', link: '/frameworks/' },
      { text: 'Express', link: '/frameworks/express' },
      { text: 'Fastify', link: '/frameworks/fastify' },
      { text: 'Next.js', link: '/frameworks/nextjs' },
      { text: 'AWS Lambda', link: '/frameworks/lambda' },
      { text: 'node:http', link: '/frameworks/node-http' },
      { text: 'Fetch runtimes (Hono, Bun, Deno, Workers)', link: '/frameworks/fetch-runtimes' },
    ],
  },
  {
    text: 'Stores',
    items: [
      { text: 'Choosing a store', link: '/stores/' },
      { text: 'Memory', link: '/stores/memory' },
      { text: 'Redis', link: '/stores/redis' },
      { text: 'DynamoDB', link: '/stores/dynamodb' },
      { text: 'PostgreSQL', link: '/stores/postgres' },
      { text: 'Writing your own store', link: '/stores/custom' },
    ],
  },
  {
    text: 'Inbox: acknowledge fast, process later',
    items: [
      { text: 'How the inbox works', link: '/inbox/' },
      { text: 'BullMQ', link: '/inbox/bullmq' },
      { text: 'pg-boss', link: '/inbox/pg-boss' },
      { text: 'Amazon SQS', link: '/inbox/sqs' },
      { text: 'Workers and dead letters', link: '/inbox/operations' },
      { text: 'Your own engine', link: '/inbox/custom-engine' },
    ],
  },
  { text: 'Observability', items: [{ text: 'Logs, traces and metrics', link: '/observability/' }] },
  {
    text: 'Tools',
    items: [
      { text: 'Local dashboard (dev)', link: '/tools/dev-dashboard' },
      { text: 'Sandbox of the service', link: '/tools/sandbox' },
      { text: 'CLI', link: '/tools/cli' },
    ],
  },
  {
    text: 'Recipes',
    items: [
      { text: 'Rotating the secret', link: '/recipes/secret-rotation' },
      { text: 'Several registrations', link: '/recipes/several-registrations' },
      { text: 'Testing your handlers', link: '/recipes/testing-handlers' },
      { text: 'Upgrading', link: '/recipes/upgrading' },
    ],
  },
  { text: 'Project', items: [{ text: 'Contributing', link: '/contributing' }] },
];
