package v1import

import _ "github.com/sandboxforge/sbf/drivers/all" // the backends sbf's binary has, as import-v1 sees them
