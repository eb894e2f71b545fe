declare module "*.css";
// A file imported as an asset (Vite's ?url): its URL on the page's own origin.
declare module "*?url" {
  const url: string;
  export default url;
}
