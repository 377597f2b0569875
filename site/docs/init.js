// Swagger UI over the document this service serves. Everything it loads comes from this origin:
// no validator badge (it would send the document to validator.swagger.io), no CDN.
window.ui = SwaggerUIBundle({
  url: "/v1/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  // A token entered under "Authorize" lives in this page's memory only: nothing on the origin keeps it.
  persistAuthorization: false,
  displayOperationId: true,
  docExpansion: "list",
  filter: true,
  tryItOutEnabled: false,
});
