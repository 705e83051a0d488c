#if canImport(AuthenticationServices) && !os(watchOS)
    import AuthenticationServices
    import Foundation

    /// Runs the authorization in `ASWebAuthenticationSession` (the system's secure browser sheet on
    /// Apple platforms, sharing cookies with Safari) and returns the redirect it ends on.
    @MainActor
    public final class WebAuthenticationSessionAgent: NSObject, ASWebAuthenticationPresentationContextProviding {
        private let anchor: ASPresentationAnchor
        private var session: ASWebAuthenticationSession?

        public init(anchor: ASPresentationAnchor) {
            self.anchor = anchor
        }

        /// Opens `url` and waits for the redirect to `callbackScheme` (the app's private-use scheme).
        public func authorize(_ url: URL, callbackScheme: String) async throws -> String {
            try await withCheckedThrowingContinuation { continuation in
                let session = ASWebAuthenticationSession(url: url, callbackURLScheme: callbackScheme) { callback, error in
                    if let callback {
                        continuation.resume(returning: callback.absoluteString)
                    } else {
                        continuation.resume(throwing: error ?? ClientError.missingCode)
                    }
                }
                session.presentationContextProvider = self
                session.prefersEphemeralWebBrowserSession = false
                self.session = session
                session.start()
            }
        }

        public nonisolated func presentationAnchor(for session: ASWebAuthenticationSession) -> ASPresentationAnchor {
            MainActor.assumeIsolated { anchor }
        }
    }
#endif
