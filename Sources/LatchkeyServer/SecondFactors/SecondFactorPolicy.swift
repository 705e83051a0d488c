/// Who must sign in with a second factor (`require-second-factor`). An account that set one up
/// uses it whatever the policy, and an administrator can require one of a single account.
public enum SecondFactorPolicy: String, Sendable, CaseIterable {
    /// Only accounts that set one up, or that an administrator marked.
    case off
    /// Administrators too: an administrator without one sets one up before reaching the console or an app.
    case admins
    /// Everyone: an account without one sets one up at its next sign-in to an app.
    case all

    /// Whether `user` must sign in with a second factor.
    public func requires(_ user: User) -> Bool {
        switch self {
        case .off: user.secondFactorRequired
        case .admins: user.secondFactorRequired || user.role == .admin
        case .all: true
        }
    }
}
